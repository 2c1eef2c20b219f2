"""`inart bench memory`: peak memory of an emulation with real training workers, workers forked
from the fork server beside workers started one interpreter each.

Same machine, topology (default fattree:6: 50 workers, 4 PSs, 45 switches), plan (inart),
model (CNN), rounds and seed, one run after the other in one invocation: first with the fork
server (host_stack/train/forkserver.py), then without (``--no-fork-server``: each worker
imports torch itself).  Memory is what emulation/measure/resources.py samples every second over the
run: the peak of the PSS summed over switches and hosts (shared pages divided among the
processes that map them: the honest total), its hosts' share, and the peak of the RSS sum
(shared pages counted once per process).  Figures, one line each, with the fork server's
ratio to the plain start and the goal: peak PSS <= 4 GB with the fork server.

``--plain-topology``: run the plain start on another (smaller) topology, when the plain
start of the large one does not fit the machine or the time; its ratio is then left out.
``--min-available-mb``: stop a run (tearing its network down) when the machine's available
memory falls below this, so a shared machine never runs out.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from control_plane.cli.args import add_json, add_topology, write_json
from control_plane.model.topologies import build_topology
from control_plane.solver.solve import plan_for
from emulation.runs.emulate import Emulation
from host_stack.train.hostrun import TrafficConfig
from host_stack.train.jobargs import MODEL_NAMES

GOAL_MB = 4096.0  # fattree:6 with CNN workers, fork server: peak PSS
SCALE = 0.25  # Mbit/s per topology unit: what the embedded target carries on 2 cores


def configure(parser: argparse.ArgumentParser) -> None:
    add_topology(parser, default="fattree:6")
    parser.add_argument("--plain-topology", default=None,
                        help="the plain start's topology (default: --topology)")
    parser.add_argument("--model", default="cnn", choices=MODEL_NAMES,
                        help="the model whose gradients flow (default cnn)")
    parser.add_argument("--rounds", type=int, default=1, help="training rounds per run")
    parser.add_argument("--deadline", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--min-available-mb", type=float, default=3072.0,
                        help="stop a run when MemAvailable falls below this")
    add_json(parser, "the figures")
    parser.set_defaults(func=run)


class MemoryGuard:
    """SIGTERM to this process (the emulation tears its network down on it) once the
    machine's available memory falls below ``floor_mb``; ``tripped`` says it did."""

    def __init__(self, floor_mb: float) -> None:
        self.floor_mb = floor_mb
        self.tripped: float | None = None  # MemAvailable (MB) when it fired
        self.lowest_mb = float("inf")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="memory-guard", daemon=True)

    def __enter__(self) -> MemoryGuard:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            avail = available_mb()
            self.lowest_mb = min(self.lowest_mb, avail)
            if avail < self.floor_mb and self.tripped is None:
                self.tripped = avail
                os.kill(os.getpid(), signal.SIGTERM)


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _meminfo_mb(field: str) -> float:
    for entry in Path("/proc/meminfo").read_text().splitlines():
        if entry.startswith(field + ":"):
            return int(entry.split()[1]) / 1024
    raise RuntimeError(f"/proc/meminfo has no {field}")


def available_mb() -> float:
    return _meminfo_mb("MemAvailable")


def one_run(topology: str, fork_server: bool, args: argparse.Namespace, out: Path) -> dict:
    """One emulation of ``topology`` with training workers: its memory and timing row."""
    topo = build_topology(topology)
    plan = plan_for(topo, "inart", 0)
    t0 = time.monotonic()
    with Emulation(topo, out, "embedded", SCALE, quiet=True, fork_server=fork_server) as emu:
        compiled = emu.install(plan)
        cfg = TrafficConfig(mode="train", model=args.model, rounds=args.rounds,
                            unit_bps=emu.unit_bps, deadline_s=args.deadline)
        row = emu.run(plan, compiled, cfg, "inart").row
        peak, split = emu.monitor.all_peak_mb, emu.monitor.all_peak_split
        rss = emu.monitor.all_peak_rss_mb
    return {"topology": topology, "model": args.model, "fork_server": fork_server,
            "rounds": args.rounds, "workers": len(topo.workers),
            "pss": len(topo.pss), "switches": len(topo.switches), "peak_pss_mb": peak,
            "host_pss_mb": split.get("hosts", 0.0), "switch_pss_mb": split.get("switches", 0.0),
            "peak_rss_mb": rss, "run_peak_pss_mb": row["peak_pss_mb"],
            "run_wall_s": row["wall_s"], "wall_s": time.monotonic() - t0}


def figures(fork: dict, plain: dict | None) -> list[dict]:
    """The labelled lines: peak PSS, hosts' PSS per worker and peak RSS sum of each start;
    the fork server's ratios to the plain start where both ran the same topology."""
    same = plain is not None and plain["topology"] == fork["topology"]
    out = []
    for r in [x for x in (plain, fork) if x is not None]:
        kind = "fork_server" if r["fork_server"] else "plain"
        base = f"memory/{r['topology']}/{r['model']}/{kind}"

        def ratio(key: str, r: dict = r) -> float | None:
            return r[key] / plain[key] if same and r["fork_server"] and plain[key] else None

        pss = {"name": f"{base}/peak_pss", "value": r["peak_pss_mb"], "unit": "MB",
               "ratio": ratio("peak_pss_mb"), "goal": None,
               "hosts_mb": r["host_pss_mb"], "switches_mb": r["switch_pss_mb"]}
        if r["fork_server"] and r["topology"] == "fattree:6":
            pss.update(goal=f"<= {GOAL_MB:.0f} MB", met=r["peak_pss_mb"] <= GOAL_MB)
        out.append(pss)
        out.append({"name": f"{base}/host_pss_per_worker",
                    "value": r["host_pss_mb"] / r["workers"], "unit": "MB",
                    "ratio": ratio("host_pss_mb"), "goal": None})
        out.append({"name": f"{base}/peak_rss_sum", "value": r["peak_rss_mb"], "unit": "MB",
                    "ratio": ratio("peak_rss_mb"), "goal": None})
        out.append({"name": f"{base}/wall", "value": r["wall_s"], "unit": "s",
                    "ratio": ratio("wall_s"), "goal": None})
    return out


def line(f: dict) -> str:
    ratio = "" if f["ratio"] is None else f"ratio {f['ratio']:.2f}"
    goal = "" if f["goal"] is None else f"goal {f['goal']}: {'met' if f['met'] else 'NOT met'}"
    return f"{f['name']:<52} {f['value']:>9.1f} {f['unit']:<3} {ratio:<12} {goal}"


def run(args: argparse.Namespace) -> int:
    if args.rounds < 1 or args.deadline <= 0:
        print("bench memory: --rounds >= 1 and --deadline > 0", file=sys.stderr)
        return 2
    plain_topology = args.plain_topology or args.topology
    runs: list[dict] = []
    signal.signal(signal.SIGTERM, _interrupt)  # between runs too: stop, never die mid-teardown
    with tempfile.TemporaryDirectory(prefix="inart-bench-memory-") as tmp, \
            MemoryGuard(args.min_available_mb) as guard:
        for topology, fork in ((args.topology, True), (plain_topology, False)):
            print(f"{topology}, {args.model} workers, {args.rounds} round(s), "
                  f"{'fork server' if fork else 'plain start (one interpreter per worker)'}",
                  flush=True)
            try:
                row = one_run(topology, fork, args, Path(tmp) / f"{topology}-{fork}")
            except (KeyboardInterrupt, RuntimeError) as exc:
                why = (f"available memory fell to {guard.tripped:.0f} MB "
                       f"(< {args.min_available_mb:.0f})" if guard.tripped is not None
                       else f"{type(exc).__name__}: {exc}")
                print(f"bench memory: {topology} stopped: {why}", file=sys.stderr)
                return 1
            runs.append(row)
    out = figures(runs[0], runs[1])
    for f in out:
        print(line(f))
    machine = {"cpus": os.cpu_count(), "loadavg_end": os.getloadavg(),
               "mem_total_mb": _meminfo_mb("MemTotal"),
               "lowest_available_mb": guard.lowest_mb,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print(f"machine: {machine['cpus']} CPUs, {machine['mem_total_mb'] / 1024:.0f} GiB, load "
          f"{machine['loadavg_end'][0]:.1f} at the end, lowest MemAvailable during the runs "
          f"{guard.lowest_mb:.0f} MB")
    if args.json:
        write_json(args.json, {"figures": out, "runs": runs, "machine": machine})
    return 0
