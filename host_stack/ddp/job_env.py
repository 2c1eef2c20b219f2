"""What a user's training script learns from its environment when inart started it: the
job (plan, addresses, transport options) and which worker of the plan this process is.

``inart train --script`` (and the emulation and real-host launchers) write the job's options
once, as the same command line every PS of the job got, to a JSON file named by
``INART_JOB``; torchrun's variables (RANK, WORLD_SIZE) say which worker this is: rank r is
the plan's r-th worker in bitmap-rank order.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from host_stack.ina.transport import WorkerTransport
from host_stack.train.jobargs import Job, load_job, process_parser

JOB_VAR = "INART_JOB"  # path of the job file
ABORT_VAR = "INART_ABORT_FILE"  # a launcher writes a job's named error here when it fails


class JobEnvError(ValueError):
    """The environment does not describe an inart job this process can join."""


@dataclass(frozen=True)
class WorkerJob:
    """This process's place in an INA job."""

    job: Job
    worker: str
    rank: int
    unit_bps: float | None  # pacing: f * x_s * this per PS stream (None: unpaced)


def job_file_text(argv: list[str]) -> str:
    """The job file a launcher writes: the PSs' shared options (``job_argv`` + addresses)."""
    return json.dumps({"argv": argv}, indent=1)


def worker_job(rank: int, world_size: int, environ: dict[str, str] | None = None) -> WorkerJob:
    """The job of ``INART_JOB`` and this rank's worker in it; JobEnvError naming what is
    missing or inconsistent (world size against the plan's workers)."""
    env = os.environ if environ is None else environ
    path = env.get(JOB_VAR)
    if not path:
        raise JobEnvError(f"backend inart: {JOB_VAR} is not set; start the script with "
                          "`inart train --script SCRIPT` (or `inart emulate --mode train "
                          "--script`, `inart run --script`), which start the PSs and set it")
    try:
        argv = json.loads(Path(path).read_text())["argv"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise JobEnvError(f"backend inart: {JOB_VAR}={path}: not a job file ({exc})") from None
    args = process_parser("inart.torch", None, "worker").parse_args([*argv, "--worker", "?"])
    job = load_job(args)
    plan_workers = job.plan.worker_ids
    if world_size != len(plan_workers):
        raise JobEnvError(f"backend inart: world size {world_size} does not match the plan's "
                          f"{len(plan_workers)} workers ({', '.join(plan_workers)})")
    if not 0 <= rank < world_size:
        raise JobEnvError(f"backend inart: rank {rank}: expected 0..{world_size - 1}")
    return WorkerJob(job, plan_workers[rank], rank, args.unit_bps)


def connect(wj: WorkerJob) -> WorkerTransport:
    """This worker's transport to every PS of the plan, HELLO answered (clear error if not)."""
    from host_stack.ina.sync import connect_worker

    return connect_worker(wj.job, wj.worker, wj.rank, wj.unit_bps)
