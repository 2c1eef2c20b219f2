"""`inart bench controller`: the controller's two speeds.  ``--parts install``: how fast
`inart install` puts a plan on a switch, beside p4runtime-shell writing the same entries one
by one, on the embedded target and bmv2.  ``--parts replan``: how long `inart serve` takes
from a network event to the new plan's entries on every switch (control_plane/service/
bench.py).  Both by default.

The plan is a fat-tree's (default fattree:6, 4 PSs, scheme inart: 45 switches).  One switch
process per target stands in for every switch in turn: its pipeline is pushed (with our
cookie, untimed) before each switch, which empties its tables, then the switch's entries and
groups are written and timed, once by `install` (control_plane/deploy/transaction.py:
connect, arbitrate, read the pipeline cookie and every table, write in batches) and once by
p4runtime-shell (setup without a pipeline, which fetches the P4Info; one Write per entry;
teardown).  After each p4runtime-shell run `verify` checks that it wrote exactly the plan
(untimed).  Two figures per contender: the writes alone (what batching changes; the goal is
on this ratio) and the whole session per switch, connect to close (with ~100 entries a
switch, session costs weigh in: inart's arbitration, pipeline check and read-back of every
table, p4runtime-shell's arbitration and P4Info fetch).
All switches' entries cannot share one switch's tables instead: the same keys (e.g. a route
to one host) carry different next hops on different switches.

Switches are started with `inart switch` (a child process: control_plane does not import
the targets).  p4runtime-shell runs in its private environment (control_plane/shell_env), one
process for the whole run (control_plane/shell_env/bench_writer.py): its start is in no figure,
and it times its own sessions as before, setup to teardown.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from control_plane.cli.args import add_json, add_quiet, add_topology, names_of, write_json
from control_plane.cli.args import progress as progress_bar
from control_plane.deploy.addressing import assign
from control_plane.deploy.entries import Compiled, SwitchEntries, compile_plan
from control_plane.deploy.pipeline import TARGET_CONFIG, Pipeline, pipeline_for
from control_plane.deploy.transaction import (
    DEFAULT_ELECTION_ID,
    LoadedPipeline,
    SwitchAddress,
    install,
    verify,
    verify_clean,
)
from control_plane.drivers.p4runtime import P4RuntimeClient
from control_plane.localhost import free_port
from control_plane.model.topologies import build_topology, command_seed
from control_plane.repo import child_env
from control_plane.service import bench as replan
from control_plane.shell_env import BENCH_WRITER, ShellEnvError, python
from control_plane.solver.solve import SCHEMES, solve

GOAL_RATIO = 5.0  # batched install vs one Write per entry, on each target
DEVICE_ID = 1
PARTS = ("install", "replan")
READY_TIMEOUT_S = 60.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_topology(parser, default="fattree:6", help_text="whose plan is installed (default "
                                                         "fattree:6)")
    parser.add_argument("--ps", type=int, default=4, help="number of PSs")
    parser.add_argument("--seed", type=int, default=0, help="PS choice and rounding")
    parser.add_argument("-s", "--scheme", default="inart", choices=SCHEMES, metavar="SCHEME",
                        help=f"planning scheme: one of {', '.join(SCHEMES)} (default inart)")
    parser.add_argument("--targets", default="embedded,bmv2", type=names_of(TARGET_CONFIG),
                        help="comma-separated; one that cannot run here is reported and skipped")
    parser.add_argument("--switches", type=int,
                        help="only the first N switches of the plan (default: all)")
    parser.add_argument("--parts", default=",".join(PARTS), type=names_of(PARTS),
                        help="comma-separated from " + ", ".join(PARTS))
    r = parser.add_argument_group("replan part")
    r.add_argument("--replan-topologies", default="fig1,fattree:6",
                   help="comma-separated topology specs")
    r.add_argument("--replan-switches", choices=("auto", "embedded", "memory"), default="auto",
                   help="embedded P4 targets or switches in memory (auto: embedded up to "
                        "--max-embedded switches)")
    r.add_argument("--max-embedded", type=int, default=64)
    r.add_argument("--events", type=int, default=5,
                   help="links per topology: each goes down, then up again")
    add_quiet(r)
    add_json(parser, "all measurements")
    parser.set_defaults(func=run)


class StandaloneSwitch:
    """`inart switch --target T` as a child process (its output in a log file)."""

    def __init__(self, target: str, log: Path) -> None:
        self.target, self.log = target, log
        self.address = f"127.0.0.1:{free_port()}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> str | None:
        """None once the switch is ready, else why it could not start."""
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "control_plane.cli", "switch", "--target", self.target,
                 "--listen", self.address, "--device-id", str(DEVICE_ID)],
                stdout=out, stderr=subprocess.STDOUT, env=child_env())
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            if "ready" in text:
                return None
            if self.proc.poll() is not None:
                return text.strip().splitlines()[-1] if text.strip() else \
                    f"exited with status {self.proc.returncode}"
            time.sleep(0.2)
        return f"not ready within {READY_TIMEOUT_S:.0f} s"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _wipe(address: str, pipeline: LoadedPipeline) -> None:
    """Empty the switch's tables and groups: push our pipeline (with our cookie) again."""
    with P4RuntimeClient(address, DEVICE_ID, DEFAULT_ELECTION_ID, timeout=60) as client:
        client.set_pipeline(pipeline.info, pipeline.config, pipeline.cookie)


class ShellWriter:
    """p4runtime-shell in its private environment, writing switches' entries on request."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([str(python()), "-I", str(BENCH_WRITER)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def write(self, address: str, entries: SwitchEntries) -> tuple[float, float]:
        """One insert (one Write RPC) per entry, as p4runtime-shell's users do.
        Returns (seconds of the inserts, seconds of the whole session)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request = {
            "address": address, "device_id": DEVICE_ID, "election_id": DEFAULT_ELECTION_ID,
            "groups": [[g.group_id, [list(r) for r in g.replicas]] for g in entries.groups],
            "entries": [{"table": e.table, "action": e.action,
                         "match": [[n, str(v)] for n, v in e.match],
                         "params": [[n, str(v)] for n, v in e.params]}
                        for e in entries.entries]}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"p4runtime-shell's writer exited (status {self.proc.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"p4runtime-shell at {address}: {answer['error']}")
        return answer["write"], answer["total"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _install_timed(compiled: Compiled, where: dict[str, SwitchAddress],
                   pipeline: Pipeline) -> tuple[float, float]:
    """`install` of one switch: (seconds of its writes, seconds of the whole call).  The
    writes run from the 'planned' event (state read, changes worked out) to 'done'."""
    marks: dict[str, float] = {}

    def mark(switch: str, event: str, count: int) -> None:
        marks[event] = time.perf_counter()

    start = time.perf_counter()
    reports = install(compiled, where, pipeline, progress=mark)
    total = time.perf_counter() - start
    if reports[0].pushed or reports[0].unchanged:
        raise RuntimeError(f"{reports[0].switch.label()}: expected an empty switch running "
                           f"our pipeline before the install")
    return marks["done"] - marks["planned"], total


def bench_target(target: str, compiled: Compiled, names: list[str], log_dir: Path,
                 shell: ShellWriter) -> dict[str, Any]:
    """Install every named switch's entries twice (inart, p4runtime-shell), timed."""
    pipeline = pipeline_for(target)
    loaded = LoadedPipeline.load(pipeline)
    switch = StandaloneSwitch(target, log_dir / f"{target}.log")
    try:
        problem = switch.start()
        if problem:
            return {"target": target, "skipped": problem}
        times = dict.fromkeys(("inart_write", "inart_total", "shell_write", "shell_total"), 0.0)
        count = 0
        for name in progress_bar(names, desc=target, unit="switch", file=sys.stderr):
            swe = compiled.switches[name]
            count += len(swe.entries) + len(swe.groups)
            where = {name: SwitchAddress(name, switch.address, DEVICE_ID)}
            _wipe(switch.address, loaded)
            write, total = _install_timed(compiled, where, pipeline)
            times["inart_write"] += write
            times["inart_total"] += total
            _wipe(switch.address, loaded)
            write, total = shell.write(switch.address, swe)
            times["shell_write"] += write
            times["shell_total"] += total
            if not verify_clean(verify(compiled, where, pipeline)):
                raise RuntimeError(f"{target}: p4runtime-shell did not write {name}'s plan")
        return {"target": target, "switches": len(names), "entries": count, **times,
                "write_ratio": times["shell_write"] / times["inart_write"],
                "total_ratio": times["shell_total"] / times["inart_total"]}
    finally:
        switch.stop()


def figure_lines(row: dict[str, Any]) -> list[str]:
    """One labelled line per figure: name, value, unit, ratio, goal."""
    target = row["target"]
    if "skipped" in row:
        return [f"controller/{target}: skipped ({row['skipped']})"]
    n, per = row["entries"], row["switches"]
    met = "met" if row["write_ratio"] >= GOAL_RATIO else "NOT met"
    return [
        f"controller/{target}/install-writes: {n / row['inart_write']:.0f} entries/s, "
        f"ratio {row['write_ratio']:.1f}x p4runtime-shell, goal >= {GOAL_RATIO:g}x: {met}",
        f"controller/{target}/p4runtime-shell-writes: {n / row['shell_write']:.0f} entries/s, "
        f"ratio 1x (one Write per entry), goal -",
        f"controller/{target}/install-per-switch: {row['inart_total'] / per * 1000:.0f} "
        f"ms/switch ({n / row['inart_total']:.0f} entries/s end to end), ratio "
        f"{row['total_ratio']:.1f}x p4runtime-shell, goal -",
        f"controller/{target}/p4runtime-shell-per-switch: {row['shell_total'] / per * 1000:.0f}"
        f" ms/switch ({n / row['shell_total']:.0f} entries/s end to end), ratio 1x, goal -",
    ]


def run(args: argparse.Namespace) -> int:
    out: dict[str, Any] = {}
    if "install" in args.parts:
        try:
            out["install"] = run_install(args)
        except ShellEnvError as exc:
            print(f"inart bench controller: error: {exc}", file=sys.stderr)
            return 2
    if "replan" in args.parts:
        out["replan"] = []
        for spec in args.replan_topologies.split(","):
            kind = args.replan_switches
            if kind == "auto":
                kind = ("embedded" if len(build_topology(spec).switches) <= args.max_embedded
                        else "memory")
            out["replan"].append(replan.measure(spec, kind, args.events, args.quiet))
            print(replan.line(out["replan"][-1]), flush=True)
    if args.json:
        print(f"measurements written to {write_json(args.json, out)}")
    return 0


def run_install(args: argparse.Namespace) -> dict[str, Any]:
    """Install throughput on every target; its figures as a dict (printed as it goes)."""
    topo = build_topology(args.topology, ps=args.ps, seed=command_seed(args.seed))
    plan = solve(topo, args.scheme, seed=args.seed)
    compiled = compile_plan(plan, assign(topo))
    names = list(compiled.switches)[:args.switches]
    total = sum(len(compiled.switches[n].entries) + len(compiled.switches[n].groups)
                for n in names)
    print(f"plan {plan.scheme} on {topo.name}: {len(names)} of {len(compiled.switches)} "
          f"switches, {total} entries and groups; one switch process stands in for each "
          f"switch in turn")
    rows = []
    shell = ShellWriter()
    try:
        with tempfile.TemporaryDirectory(prefix="inart-bench-controller-") as tmp:
            for target in args.targets:
                row = bench_target(target, compiled, names, Path(tmp), shell)
                rows.append(row)
                for line in figure_lines(row):
                    print(line, flush=True)
    finally:
        shell.close()
    return {"topology": topo.name, "scheme": plan.scheme, "goal_ratio": GOAL_RATIO,
            "targets": rows}
