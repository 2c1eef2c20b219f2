"""`inart bench pacing`: INA's sent / planned rate, paced in user space vs by the kernel, on an
idle machine, beside CPU burners and under training load, with and without CPU isolation of
the switches, side by side in one run.

Per topology one emulated network; on it one scheme's plan runs once per {load} x
{isolation} x {user, kernel} pacing.  User pacing is the worker's token bucket
(host_stack/ina/pacing.py), which sends nothing while its process waits for a CPU; kernel
pacing is an htb class per stream on the worker's egress (emulation/network/host_pacing.py), which
keeps sending what the worker queued.  Loads (``--loads``):
- ``idle``: synthetic gradients of the model's size (every sum checked), the machine as it is;
- ``burners``: the same beside ``--burners`` busy processes (one per CPU by default);
- ``train``: the workers train ``--model`` for real (torch, forked from the emulation's fork
  server, host_stack/train/forkserver.py), so the senders are the processes that compute:
  the load the head-to-head puts on the machine.
Isolations (``--isolations``): ``none``, or a weight W: the switch processes and the hosts'
processes in two cgroups weighted W : 100 (emulation/network/cpu_isolation.py), set on the running
network between runs.  Each line: the achieved / plan rate (goal >= 0.9, the fidelity
verdict's threshold, emulation/measure/fidelity.py) and its ratio to the user-paced run without
isolation under the same load; under training the rate once every worker sends (the verdict's,
emulation/measure/metrics.py), with the workers' mean, which waits for their peers'
compute, beside it (``mean_ratio``); details: retransmissions, the machine's busy fraction and
saturated share during the run, the switches' and hosts' CPU (cores), and for kernel pacing
the share of the workers' bytes tc counted in the pacing classes.

fattree:6 builds 45 switches and 54 hosts (50 CNN workers under ``train``): run it under the
heavy and network locks, short (``--topology fattree:6 --scales 0.01 --rounds 3``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from control_plane.cli.args import add_json, add_topology, deprecate, write_json
from control_plane.model.topologies import build_topology
from control_plane.solver.solve import SCHEMES, plan_for
from emulation.measure.fidelity import MIN_RATE_RATIO
from emulation.network.cpu_isolation import switch_weight
from emulation.runs.emulate import Emulation
from host_stack.train.hostrun import TrafficConfig
from host_stack.train.jobargs import model_size

LOADS = ("idle", "burners", "train")
PACINGS = ("user", "kernel")
NO_ISOLATION = "none"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_topology(parser, many=True)
    deprecate(parser, "--topologies", "--topology")
    parser.add_argument("--scales", default="0.25",
                        help="Mbit/s per topology unit, one per topology or one for all")
    parser.add_argument("-s", "--scheme", default="inart", choices=SCHEMES, metavar="SCHEME",
                        help=f"the plan every run paces to: one of {', '.join(SCHEMES)} "
                             f"(default inart)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per run (the first, "
                        "with start-up, is left out of the rate)")
    parser.add_argument("--loads", default="idle,train",
                        help=f"comma-separated from {', '.join(LOADS)}")
    parser.add_argument("--isolations", default=NO_ISOLATION,
                        help="comma-separated: none, or a switch CPU weight W (1..10000; the "
                             "hosts get 100), e.g. none,800")
    parser.add_argument("--model", default="cnn", choices=("mlp", "cnn"),
                        help="what the train load trains (and the idle runs' gradient size)")
    parser.add_argument("--values", type=int, default=None,
                        help="gradient length of the idle and burners runs (default: the "
                             "model's parameter count, what the train runs move)")
    parser.add_argument("--pace", type=float, default=1.0, help="pace at FACTOR x plan")
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 1,
                        help="busy processes beside the burners runs (default: one per CPU)")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds per run")
    add_json(parser, "the figures")
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


def isolation_weight(name: str) -> int | None:
    """An --isolations entry: None for none, else the switches' CPU weight."""
    return None if name == NO_ISOLATION else switch_weight(name)


def measure(topology: str, scale: float, args: argparse.Namespace, out: Path) -> list[dict]:
    """Every load x isolation x pacing run on one network: a row each."""
    topo = build_topology(topology)
    plan = plan_for(topo, args.scheme, 0)
    values = args.values or model_size(argparse.Namespace(model=args.model, seed=0))
    rows = []
    with Emulation(topo, out / topology.replace(":", "-"), scale=scale, quiet=True) as emu:
        base = TrafficConfig(rounds=args.rounds, values=values, unit_bps=emu.unit_bps,
                             rate_factor=args.pace, deadline_s=args.deadline, model=args.model)
        for load in args.loads:
            cfg = replace(base, mode="train" if load == "train" else "synthetic")
            with burners(args.burners if load == "burners" else 0):
                for isolation in args.isolations:
                    note = emu.isolate(isolation_weight(isolation))
                    for pacing in PACINGS:
                        compiled = emu.install(plan)  # fresh registers and counters
                        run_ = emu.run(plan, compiled, replace(cfg, pacing=pacing),
                                       f"{pacing}-{load}-{isolation}")
                        r = run_.row
                        rows.append({
                            "topology": topology, "scale": scale, "load": load,
                            "isolation": isolation, "cpu_isolation": note, "pacing": pacing,
                            "rate_ratio": r["rate_ratio"], "rate_mbps": r["rate_mbps"],
                            "rate_ratio_mean": r["rate_ratio_mean"],
                            "plan_rate_mbps": r["plan_rate_mbps"], "retx": r["retx"],
                            "exact": r["exact"], "cpu_busy": r["cpu_busy"],
                            "cpu_saturated_share": r["cpu_saturated_share"],
                            "run_queue_per_cpu": r["run_queue_per_cpu"],
                            "switch_cores": r["switch_cores"], "host_cores": r["host_cores"],
                            "kernel_paced_share": r.get("kernel_paced_share"),
                            "fidelity": r["fidelity"]})
            emu.isolate(None)
    return rows


def load_trains(r: dict) -> bool:
    return r["load"] == "train" and r.get("rate_ratio_mean") is not None


def name_of(r: dict) -> str:
    iso = "" if r.get("isolation", NO_ISOLATION) == NO_ISOLATION else f"/w{r['isolation']}"
    return f"pacing/{r['topology']}/{r['load']}/{r['pacing']}{iso}"


def figures(rows: list[dict]) -> list[dict]:
    """One figure per run, its ratio to the user-paced run without isolation under the same
    load (None for that run itself)."""
    out = []
    for r in rows:
        base = next((u for u in rows if u["topology"] == r["topology"]
                     and u["load"] == r["load"] and u["pacing"] == "user"
                     and u.get("isolation", NO_ISOLATION) == NO_ISOLATION), None)
        details = {"retx": r["retx"], "exact": r["exact"], "cpu_busy": round(r["cpu_busy"], 3),
                   "saturated": round(r["cpu_saturated_share"], 2),
                   "run_queue": round(r["run_queue_per_cpu"], 2),
                   "plan_mbps": round(r["plan_rate_mbps"], 4)}
        if load_trains(r):  # the workers' mean, waiting for peers' compute included
            details["mean_ratio"] = round(r["rate_ratio_mean"], 3)
        if "switch_cores" in r:
            details.update(switch_cores=round(r["switch_cores"], 2),
                           host_cores=round(r["host_cores"], 2))
        if r["kernel_paced_share"] is not None:
            details["tc_share"] = round(r["kernel_paced_share"], 3)
        own = base is r or base is None
        out.append({
            "name": name_of(r), "value": r["rate_ratio"], "unit": "x plan",
            "ratio": None if own or not base["rate_ratio"]
            else r["rate_ratio"] / base["rate_ratio"],
            "goal": f">= {MIN_RATE_RATIO:g}", "met": r["rate_ratio"] >= MIN_RATE_RATIO,
            **details})
    return out


def line(f: dict) -> str:
    ratio = "" if f["ratio"] is None else f"vs user {f['ratio']:.2f}"
    rest = ", ".join(f"{k} {v}" for k, v in f.items()
                     if k not in ("name", "value", "unit", "ratio", "goal", "met"))
    return (f"{f['name']:<38} {f['value']:>7.3f} {f['unit']:<6} {ratio:<13} goal {f['goal']}: "
            f"{'met' if f['met'] else 'NOT met'}  ({rest})")


def parse_list(text: str, option: str, check) -> list[str]:
    """A comma-separated option's entries, each passed through ``check`` (ValueError or
    ArgumentTypeError: the option is refused naming the entry)."""
    items = [t for t in text.split(",") if t]
    if not items:
        raise ValueError(f"{option}: expected at least one entry")
    for item in items:
        try:
            check(item)
        except (ValueError, argparse.ArgumentTypeError) as exc:
            raise ValueError(f"{option} {item!r}: {exc}") from None
    return items


def _load(name: str) -> None:
    if name not in LOADS:
        raise ValueError(f"expected one of {', '.join(LOADS)}")


def run(args: argparse.Namespace) -> int:
    topologies = list(args.topology)
    try:
        scales = [float(s) for s in args.scales.split(",")]
    except ValueError:
        scales = []
    if len(scales) == 1:
        scales *= len(topologies)
    if not topologies or len(scales) != len(topologies) or min(scales) <= 0:
        print("bench pacing: --scales: one positive value, or one per --topology entry",
              file=sys.stderr)
        return 2
    if (args.rounds < 2 or args.burners < 0 or not 0 < args.pace <= 1
            or (args.values is not None and args.values < 1)):
        print("bench pacing: --rounds >= 2, --burners >= 0, 0 < --pace <= 1, --values >= 1",
              file=sys.stderr)
        return 2
    try:
        args.loads = parse_list(args.loads, "--loads", _load)
        args.isolations = parse_list(args.isolations, "--isolations", isolation_weight)
    except ValueError as exc:
        print(f"bench pacing: {exc}", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="inart-bench-pacing-") as tmp:
        for topology, scale in zip(topologies, scales, strict=True):
            rows += measure(topology, scale, args, Path(tmp))
    figs = figures(rows)
    if args.json:
        write_json(args.json, figs)
    if args.json != "-":
        print(f"{args.scheme} plan, {args.rounds} rounds, {args.model} gradients (train: real "
              f"training), pace {args.pace:g}, {args.burners} burners in the burners runs, "
              f"{os.cpu_count()} CPUs")
        notes = {r["isolation"]: r["cpu_isolation"] for r in rows}
        for iso, note in notes.items():
            if iso != NO_ISOLATION:
                print(f"isolation w{iso}: {note}")
        for f in figs:
            print(line(f))
    return 0 if all(r["exact"] is not False for r in rows) else 1
