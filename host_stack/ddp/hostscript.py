"""A user's PyTorch script on every worker host of a job, over the job's PSs: loopback
(`inart train --script`), Mininet hosts (`inart emulate --mode train --script`) and real
machines (`inart run --script`) alike, through the ``Hosts`` a launcher gives.

The PSs run in ``--mode allreduce`` with the job's options; each worker host runs the
script with torchrun's variables (RANK = the worker's bitmap rank in the plan, WORLD_SIZE,
LOCAL_RANK 0, MASTER_ADDR = rank 0's address) and ``INART_JOB``, which ``import inart.torch``
reads.  Rank 0's output is shown as it comes; every rank's stays in its log.  When a process
fails, the others are told through the abort file (the backend fails their all-reduces with
that failure's name and they exit), then stopped by the hosts' owner: the job ends with one
named error, never a hang.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from host_stack.ddp.job_env import ABORT_VAR, JOB_VAR, job_file_text
from host_stack.train.hostrun import (
    SHARED,
    HostFiles,
    Hosts,
    JobProcesses,
    JobSource,
    TrafficError,
)

# the values one all-reduce round carries at most (the PSs' shards together): DDP's 25 MB
# buckets fit in one round, with room for a bucket that one large parameter overfills
CAPACITY_VALUES = 1 << 23
ABORT_GRACE_S = 15.0  # how long the other ranks get to end on their own after a failure


@dataclass(frozen=True)
class ScriptJob:
    """What runs on the workers: the script, its arguments, and the job's own options."""

    script: Path
    args: tuple[str, ...] = ()
    job_argv: tuple[str, ...] = ()  # transport options every process gets (--n, --window ...)
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    iface: dict[str, str] = field(default_factory=dict)  # worker -> gloo's interface
    deadline_s: float = 1800.0


@dataclass
class ScriptResult:
    """The PSs' counters, the run's wall time and what rank 0 printed."""

    ps_stats: dict[str, dict]
    wall_s: float
    rank0_lines: list[str]


def script_env(rank: int, world: int, job: ScriptJob, job_file: Path, abort_file: Path,
               worker: str) -> dict[str, str]:
    """torchrun's variables for one rank, plus the job and abort files."""
    env = {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": "0",
           "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": str(rank), "MASTER_ADDR": job.master_addr,
           "MASTER_PORT": str(job.master_port), "OMP_NUM_THREADS": "1",
           "PYTHONSAFEPATH": "",  # the script's own directory stays importable
           JOB_VAR: str(job_file), ABORT_VAR: str(abort_file)}
    if worker in job.iface:
        env["GLOO_SOCKET_IFNAME"] = job.iface[worker]
    return env


def run_script_hosts(net: Hosts, source: JobSource, job: ScriptJob, workdir: Path,
                     quiet: bool = False, files: HostFiles = SHARED) -> ScriptResult:
    """Start the PSs, then the script on every worker; return when every rank exited 0."""
    workdir.mkdir(parents=True, exist_ok=True)
    argv = [*source.argv, *job.job_argv, "--model", "synthetic", "--values",
            str(CAPACITY_VALUES)]
    t0 = time.monotonic()
    job_procs = JobProcesses(net, workdir, job.deadline_s)
    procs, start, next_event = job_procs.procs, job_procs.start, job_procs.next_event

    for ps in source.pss:
        start(ps, [sys.executable, "-m", "host_stack.ina.ps", *argv, "--ps", ps, "--mode",
                   "allreduce", *source.ps_argv, "--stats", str(workdir / f"{ps}.stats.json"),
                   "--idle-exit", str(job.deadline_s)])
    ready: set[str] = set()
    while len(ready) < len(source.pss):
        name, rec = next_event()
        ready |= {name} if rec["event"] == "ready" else set()
    job_file, abort_file = workdir / "job.json", workdir / "abort"
    job_file.write_text(job_file_text(argv))
    abort_file.unlink(missing_ok=True)
    files.share(source.workers, [job_file, job.script])
    rank0 = min(source.workers, key=source.ranks.get)
    for w in source.workers:
        start(w, [sys.executable, str(job.script), *job.args],
              script_env(source.ranks[w], len(source.workers), job, job_file, abort_file, w))
    ended: set[str] = set()
    lines: list[str] = []
    try:
        while len(ended) < len(source.workers):
            name, rec = next_event()
            if rec["event"] == "eof" and name in source.workers:
                ended.add(name)
            elif name == rank0 and rec["event"] != "eof":
                lines.append(rec.get("line", json.dumps(rec)))
                if not quiet:
                    print(f"[{rank0}] {lines[-1]}", flush=True)
    except TrafficError as exc:
        abort_file.write_text(str(exc).splitlines()[0])
        files.share(source.workers, [abort_file])
        end = time.monotonic() + ABORT_GRACE_S
        while time.monotonic() < end and any(procs[w].poll() is None for w in source.workers):
            time.sleep(0.1)
        raise
    for ps in source.pss:  # SIGTERM: the PSs write their counters and exit
        procs[ps].terminate()
        try:
            procs[ps].wait(timeout=15)
        except subprocess.TimeoutExpired:
            procs[ps].kill()
    stats = {}
    for ps in source.pss:
        path = workdir / f"{ps}.stats.json"
        files.fetch(ps, path)
        stats[ps] = json.loads(path.read_text()) if path.exists() else {}
    return ScriptResult(stats, time.monotonic() - t0, lines)

