"""`inart train --script`: a user's PyTorch script on every worker of a plan, on loopback.

The PSs run as in any INA job (``python -m host_stack.ina.ps --mode allreduce``); the script
runs once per worker with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT: env:// rendezvous on a free port) and
``INART_JOB``, which ``import inart.torch`` reads.  Rank 0's output is shown as it comes;
every rank's is kept in its log.  When a process fails, the others are told through the
abort file (the backend fails their all-reduces with the failure's name and they exit),
then stopped: the job ends with one named error, never a hang.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from host_stack.collectives.launch import free_port
from host_stack.ddp.job_env import ABORT_VAR, JOB_VAR, job_file_text
from host_stack.ina.addresses import loopback
from host_stack.ina.jobplan import JobPlan, load_plan
from host_stack.train.jobargs import job_argv
from host_stack.train.launcher import Launcher, LaunchError, resolve_plan

# the values one all-reduce round carries at most (the PSs' shards together): DDP's 25 MB
# buckets fit in one round, with room for a bucket that one large parameter overfills
CAPACITY_VALUES = 1 << 23
ABORT_GRACE_S = 15.0  # how long the other ranks get to end on their own after a failure


@dataclass
class ScriptResult:
    """What `inart train --script` reports."""

    plan: JobPlan
    wall_s: float
    ps_stats: dict[str, dict] = field(default_factory=dict)
    rank0_lines: list[str] = field(default_factory=list)


def script_env(base: dict[str, str], rank: int, world: int, master_port: int, job_file: Path,
               abort_file: Path) -> dict[str, str]:
    """torchrun's variables for one rank, plus the job and abort files."""
    env = {k: v for k, v in base.items() if k != "PYTHONSAFEPATH"}  # the script's own dir
    env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
               LOCAL_WORLD_SIZE=str(world), GROUP_RANK="0", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(master_port), OMP_NUM_THREADS=base.get("OMP_NUM_THREADS", "1"),
               **{JOB_VAR: str(job_file), ABORT_VAR: str(abort_file)})
    return env


def run_script(args, workdir: Path) -> ScriptResult:
    """Start the PSs and the script on every worker; wait for all of them to end."""
    t0 = time.monotonic()
    deadline = t0 + args.deadline
    with Launcher(args, workdir) as launcher:
        plan_path = resolve_plan(args.plan, workdir)
        plan = load_plan(plan_path)
        addresses = loopback(plan.ps_ids + plan.worker_ids)
        (workdir / "addresses.json").write_text(addresses.to_json())
        args.model, args.values = "synthetic", CAPACITY_VALUES
        shared = job_argv(args)
        shared[shared.index("--plan") + 1] = str(plan_path)
        shared += ["--addresses", str(workdir / "addresses.json")]
        for ps in plan.ps_ids:
            launcher.start(ps, [sys.executable, "-m", "host_stack.ina.ps", *shared, "--ps", ps,
                                 "--mode", "allreduce", "--idle-exit", str(args.deadline),
                                 "--stats", str(workdir / f"{ps}.stats.json")])
        ready: set[str] = set()
        while len(ready) < len(plan.ps_ids):
            name, rec = launcher.next_event(min(deadline, time.monotonic() + 120))
            ready |= {name} if rec["event"] == "ready" else set()
        job_file, abort_file = workdir / "job.json", workdir / "abort"
        job_file.write_text(job_file_text(shared))
        port = free_port()
        script = [sys.executable, str(Path(args.script).resolve()), *args.script_args]
        for rank, worker in enumerate(plan.worker_ids):
            launcher.start(worker, script, script_env(launcher.env, rank, plan.workers, port,
                                                       job_file, abort_file))
        lines = _follow(launcher, plan, deadline, abort_file, args.quiet)
        launcher.stop_all()
        stats = {ps: json.loads(p.read_text()) for ps in plan.ps_ids
                 if (p := workdir / f"{ps}.stats.json").exists()}
        return ScriptResult(plan, time.monotonic() - t0, stats, lines)


def _follow(launcher: Launcher, plan: JobPlan, deadline: float, abort_file: Path,
            quiet: bool) -> list[str]:
    """Echo rank 0's lines until every rank exited 0; on a failure, abort the job."""
    rank0 = plan.worker_ids[0]
    ended: set[str] = set()
    lines: list[str] = []
    try:
        while len(ended) < plan.workers:
            name, rec = launcher.next_event(deadline)
            if rec["event"] == "eof" and name in plan.worker_ids:
                ended.add(name)
            elif name == rank0 and rec["event"] != "eof":
                line = rec.get("line", json.dumps(rec))
                lines.append(line)
                if not quiet:
                    print(f"[{rank0}] {line}", flush=True)
    except LaunchError as exc:
        reason = str(exc).splitlines()[0]
        abort_file.write_text(reason)
        end = time.monotonic() + ABORT_GRACE_S
        while time.monotonic() < end and any(
                launcher.procs[w].poll() is None for w in plan.worker_ids):
            time.sleep(0.1)
        raise
    return lines


def train_script(args) -> ScriptResult:
    """Run the script job in a temporary directory (kept with --keep-logs)."""
    if not Path(args.script).is_file():
        raise LaunchError(f"--script {args.script}: no such file")
    if args.keep_logs:
        return run_script(args, Path(tempfile.mkdtemp(prefix="inart-script-")))
    with tempfile.TemporaryDirectory(prefix="inart-script-") as tmp:
        return run_script(args, Path(tmp))
