"""`inart train --script`: a user's PyTorch script on every worker of a plan, on loopback
(host_stack/ddp/hostscript.py runs it; this module gives it local processes and ports)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from control_plane.processes import stop_process
from control_plane.repo import child_env
from host_stack.collectives.launch import free_port
from host_stack.ddp.hostscript import ScriptJob, ScriptResult, run_script_hosts
from host_stack.ina.addresses import loopback
from host_stack.ina.jobplan import JobPlan, load_plan
from host_stack.ina.result_group import pick_group
from host_stack.train.hostrun import JobSource
from host_stack.train.jobargs import MAX_N_LOOPBACK, TRANSPORT_OPTIONS, job_argv
from host_stack.train.launcher import resolve_plan


class LocalHosts:
    """Every host is this machine: processes in their own sessions, stopped together."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def popen(self, host: str, cmd: list[str], env: dict[str, str] | None = None,
              **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, env=child_env(PYTHONUNBUFFERED="1", **(env or {})),
                                start_new_session=True, **kwargs)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            stop_process(proc, grace=5.0)


def run_script(args, workdir: Path) -> tuple[JobPlan, ScriptResult]:
    """The plan's PSs and the script on every worker, all on loopback ports."""
    plan_path = resolve_plan(args.plan, workdir)
    plan = load_plan(plan_path)
    addresses = workdir / "addresses.json"
    addresses.write_text(loopback(plan.ps_ids + plan.worker_ids).to_json())
    source = JobSource(["--plan", str(plan_path), "--addresses", str(addresses)], [],
                       list(plan.worker_ids), list(plan.ps_ids),
                       {w: plan.rank(w) for w in plan.worker_ids}, "script")
    transport = job_argv(args, TRANSPORT_OPTIONS)
    if args.n is None:  # no switch reads loopback packets: a datagram's worth each
        transport += ["--n", str(MAX_N_LOOPBACK)]
    if args.result_group is None and (group := pick_group()):  # nor replicates RESULTs:
        transport += ["--result-group", "{}:{}".format(*group)]  # the kernel does, once each
    job = ScriptJob(Path(args.script).resolve(), tuple(args.script_args), tuple(transport),
                    master_port=free_port(), deadline_s=args.deadline)
    hosts = LocalHosts()
    try:
        return plan, run_script_hosts(hosts, source, job, workdir, args.quiet)
    finally:
        hosts.stop()


def train_script(args) -> tuple[JobPlan, ScriptResult]:
    """Run the script job in a temporary directory (kept with --keep-logs)."""
    if not Path(args.script).is_file():
        raise ValueError(f"--script {args.script}: no such file")
    if args.keep_logs:
        return run_script(args, Path(tempfile.mkdtemp(prefix="inart-script-")))
    with tempfile.TemporaryDirectory(prefix="inart-script-") as tmp:
        return run_script(args, Path(tmp))
