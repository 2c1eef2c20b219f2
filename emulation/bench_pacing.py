"""`inart bench pacing`: INA's sent / planned rate, paced in user space vs by the kernel,
on an idle and on a loaded machine, side by side in one run.

Per topology one emulated network; on it one scheme's plan (synthetic gradients, every sum
checked) runs four times: {user, kernel} pacing x {as the machine is, with CPU burners}.
User pacing is the worker's token bucket (host_stack/ina/pacing.py), which sends nothing
while its process waits for a CPU; kernel pacing is an htb class per stream on the worker's
egress (emulation/host_pacing.py), which keeps sending what the worker queued.  The burners
(``--burners``, one busy Python process each, default one per CPU) stand for the training
processes that share a CPU with the senders (50 CNN workers on fattree:6).  Each line: the
achieved / plan rate (goal >= 0.9, the fidelity verdict's threshold, emulation/fidelity.py),
for kernel lines its ratio to the user line beside it; details: retransmissions, the
machine's busy fraction and saturated share during the run, and for kernel pacing the share
of the workers' bytes tc counted in the pacing classes.

fattree:6 builds 45 switches and 54 hosts: run it under the heavy and network locks, short
(``--topologies fattree:6 --scales 0.01 --rounds 3 --values 10000``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from control_plane.model.topologies import build_topology
from control_plane.solver.solve import plan_for
from emulation.emulate import Emulation
from emulation.fidelity import MIN_RATE_RATIO
from host_stack.train.hostrun import TrafficConfig

LOADS = ("idle", "loaded")
PACINGS = ("user", "kernel")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--topologies", default="fig1", help="comma-separated (fig1,fattree:6)")
    parser.add_argument("--scales", default="0.25",
                        help="Mbit/s per topology unit, one per topology or one for all")
    parser.add_argument("--scheme", default="inart", help="the plan every run paces to")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per run (the first, "
                        "with start-up, is left out of the rate)")
    parser.add_argument("--values", type=int, default=32 * 1500, help="gradient length")
    parser.add_argument("--pace", type=float, default=1.0, help="pace at FACTOR x plan")
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 1,
                        help="busy processes alongside the loaded runs (default: one per CPU)")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    parser.set_defaults(func=run)


@contextmanager
def burners(count: int):
    """``count`` processes that keep a CPU busy each until the block ends."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(count)]
    try:
        time.sleep(0.5)  # running before the measured run starts
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=10)


def measure(topology: str, scale: float, args: argparse.Namespace, out: Path) -> list[dict]:
    """The four runs on one network: a row each (rate ratio, retx, CPU, pacing proof)."""
    topo = build_topology(topology)
    plan = plan_for(topo, args.scheme, 0)
    rows = []
    with Emulation(topo, out / topology.replace(":", "-"), scale=scale, quiet=True) as emu:
        base = TrafficConfig(rounds=args.rounds, values=args.values, unit_bps=emu.unit_bps,
                             rate_factor=args.pace, deadline_s=args.deadline)
        for load in LOADS:
            with burners(args.burners if load == "loaded" else 0):
                for pacing in PACINGS:
                    compiled = emu.install(plan)  # fresh registers and counters
                    run_ = emu.run(plan, compiled, replace(base, pacing=pacing),
                                   f"{pacing}-{load}")
                    r = run_.row
                    rows.append({
                        "topology": topology, "scale": scale, "load": load, "pacing": pacing,
                        "rate_ratio": r["rate_ratio"], "rate_mbps": r["rate_mbps"],
                        "plan_rate_mbps": r["plan_rate_mbps"], "retx": r["retx"],
                        "exact": r["exact"], "cpu_busy": r["cpu_busy"],
                        "cpu_saturated_share": r["cpu_saturated_share"],
                        "run_queue_per_cpu": r["run_queue_per_cpu"],
                        "kernel_paced_share": r.get("kernel_paced_share"),
                        "fidelity": r["fidelity"]})
    return rows


def figures(rows: list[dict]) -> list[dict]:
    """One figure per run; a kernel run's ratio is its rate ratio over the user run's."""
    out = []
    for r in rows:
        user = next(u for u in rows if u["topology"] == r["topology"]
                    and u["load"] == r["load"] and u["pacing"] == "user")
        details = {"retx": r["retx"], "exact": r["exact"], "cpu_busy": round(r["cpu_busy"], 3),
                   "saturated": round(r["cpu_saturated_share"], 2),
                   "run_queue": round(r["run_queue_per_cpu"], 2),
                   "plan_mbps": round(r["plan_rate_mbps"], 4)}
        if r["kernel_paced_share"] is not None:
            details["tc_share"] = round(r["kernel_paced_share"], 3)
        out.append({
            "name": f"pacing/{r['topology']}/{r['load']}/{r['pacing']}",
            "value": r["rate_ratio"], "unit": "x plan",
            "ratio": r["rate_ratio"] / user["rate_ratio"] if r["pacing"] == "kernel"
            and user["rate_ratio"] else None,
            "goal": f">= {MIN_RATE_RATIO:g}", "met": r["rate_ratio"] >= MIN_RATE_RATIO,
            **details})
    return out


def line(f: dict) -> str:
    ratio = "" if f["ratio"] is None else f"kernel/user {f['ratio']:.2f}"
    rest = ", ".join(f"{k} {v}" for k, v in f.items()
                     if k not in ("name", "value", "unit", "ratio", "goal", "met"))
    return (f"{f['name']:<34} {f['value']:>7.3f} {f['unit']:<6} {ratio:<17} goal {f['goal']}: "
            f"{'met' if f['met'] else 'NOT met'}  ({rest})")


def run(args: argparse.Namespace) -> int:
    topologies = [t for t in args.topologies.split(",") if t]
    try:
        scales = [float(s) for s in args.scales.split(",")]
    except ValueError:
        scales = []
    if len(scales) == 1:
        scales *= len(topologies)
    if not topologies or len(scales) != len(topologies) or min(scales) <= 0:
        print("bench pacing: --scales: one positive value, or one per --topologies entry",
              file=sys.stderr)
        return 2
    if args.rounds < 2 or args.values < 1 or args.burners < 0 or not 0 < args.pace <= 1:
        print("bench pacing: --rounds >= 2, --values >= 1, --burners >= 0, 0 < --pace <= 1",
              file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="inart-bench-pacing-") as tmp:
        for topology, scale in zip(topologies, scales, strict=True):
            rows += measure(topology, scale, args, Path(tmp))
    figs = figures(rows)
    if args.json:
        print(json.dumps(figs, indent=1))
    else:
        print(f"{args.scheme} plan, synthetic, {args.rounds} rounds of {args.values} values, "
              f"pace {args.pace:g}, {args.burners} burners when loaded, {os.cpu_count()} CPUs")
        for f in figs:
            print(line(f))
    return 0 if all(r["exact"] for r in rows) else 1
