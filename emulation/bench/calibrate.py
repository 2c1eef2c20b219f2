"""`inart bench calibrate`: the flow-level simulation against the emulation, one configuration.

The emulation side is the head-to-head (emulation/experiments/head_to_head.py): run here with
its own options (root, Mininet), or read from a saved ``head_to_head.json`` (``--from``).  The
simulation then runs exactly what was emulated: the same topology at the same Mbit/s per unit
(the emulation's ``--scale``), the same INA plans (solved with the run's seed), the same
gradient (the model's fp32 parameters) and the same pacing factor.  Per scheme it prints the
emulated and simulated communication time per iteration and their ratio (the emulated one is
the exchange, from the last worker's start of its sync to the last worker's end: the
simulation starts every worker together, while the slowest worker's sync also holds its wait
for the others' compute, shown beside it), and the largest
relative error of the bytes per iteration on any directed link that carries traffic (at least
``LINK_FLOOR`` of the busiest link's bytes in either run); then whether the two order the
schemes alike by communication time.  Every figure is a labelled line against its goal
(within ``--tolerance``), and ``--json`` writes them with the per-link numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from control_plane.bench.figures import line
from control_plane.cli.args import add_json, write_json
from control_plane.model.topologies import build_topology
from control_plane.model.topology import Topology
from control_plane.report import format_table
from control_plane.solver.solve import plan_for
from simulation.host_cost import DEFAULT_HOST_OVERHEAD_US

LINK_FLOOR = 0.01  # links below 1% of the busiest link's bytes: idle (stray frames only)
DEFAULT_TOLERANCE = 0.10
# gloo's host time per message on the machine the saved runs were emulated on (2 shared
# cores; simulation/host_cost.py says how it was measured).  Used with --from; a run that
# emulates measures its own machine's right after the emulation (MEASURE_ROUND_TRIPS).
HOST_OVERHEAD_US = DEFAULT_HOST_OVERHEAD_US
MEASURE_ROUND_TRIPS = 300


@dataclass
class Emulated:
    """One scheme's head-to-head runs reduced to what the simulation predicts."""

    scheme: str
    comm_s: float  # median over the runs of each run's median per-iteration exchange time
    sync_s: float  # the same of the slowest worker's sync (with its wait for the others)
    link_bytes: dict[str, float]  # per directed link, per iteration, mean over the runs
    runs: int
    seed: int  # the first run's seed: the plan the simulation uses


def emulated(rows: list[dict[str, Any]]) -> dict[str, Emulated]:
    """Per scheme (in order of appearance) from head-to-head rows; rows without bytes per link
    (older runs) are refused, naming the field."""
    out: dict[str, Emulated] = {}
    for scheme in dict.fromkeys(r["scheme"] for r in rows):
        mine = [r for r in rows if r["scheme"] == scheme]
        for r in mine:
            if not r.get("bytes_per_link") or not r.get("rounds"):
                raise ValueError(f"head-to-head run {scheme} seed {r.get('seed')}: no "
                                 "'bytes_per_link' or 'rounds' (re-run the head-to-head)")
        per_iter = [{k: v / r["rounds"] for k, v in r["bytes_per_link"].items()} for r in mine]
        links = {k: statistics.fmean(p.get(k, 0) for p in per_iter) for k in per_iter[0]}
        sync = statistics.median(r["comm_s"] for r in mine)
        # older runs have no exchange time: their slowest worker's sync stands in
        comm = (statistics.median(r["exchange_s"] for r in mine)
                if all(r.get("exchange_s") is not None for r in mine) else sync)
        out[scheme] = Emulated(scheme, comm, sync, links, len(mine), min(r["seed"] for r in mine))
    return out


def model_bytes(model: str) -> int:
    """Bytes of the model's fp32 gradient (what every scheme all-reduces per iteration)."""
    from host_stack.train.models import build_model, flat_params

    return int(flat_params(build_model(model)).numel()) * 4


def link_errors(emu: dict[str, float], sim: dict[str, float],
                floor: float = LINK_FLOOR) -> dict[str, float]:
    """Relative error |sim - emu| / emu per directed link carrying traffic in either run
    (>= ``floor`` of the busiest link's bytes in that run); a link only the simulation
    uses counts as an error of 1."""
    top_emu, top_sim = max(emu.values(), default=0), max(sim.values(), default=0)
    out = {}
    for link in sorted(set(emu) | set(sim)):
        e, s = emu.get(link, 0.0), sim.get(link, 0.0)
        if e >= floor * top_emu and e > 0:
            out[link] = abs(s - e) / e
        elif s >= floor * top_sim and s > 0:
            out[link] = 1.0
    return out


def swapped_pairs(emu: dict[str, float], sim: dict[str, float],
                  tolerance: float) -> list[tuple[str, str]]:
    """Pairs (a, b) the emulation orders a faster than b by more than ``tolerance`` (relative)
    that the simulation orders the other way; pairs closer than that are ties at the
    calibration's own precision."""
    out = []
    for a in emu:
        for b in emu:
            if a != b and emu[a] * (1 + tolerance) < emu[b] and sim[a] > sim[b]:
                out.append((a, b))
    return out


def order(times: dict[str, float]) -> str:
    return " < ".join(sorted(times, key=times.__getitem__))


def calibrate(setup: dict[str, Any], rows: list[dict[str, Any]], tolerance: float,
              latency_us: float | None, host_overhead_us: float = HOST_OVERHEAD_US
              ) -> dict[str, Any]:
    """Simulate every emulated scheme of a head-to-head (``setup``, ``rows`` as its JSON
    has them) and compare."""
    from simulation.run import SCHEMES, simulate

    topo: Topology = build_topology(setup["topology"])
    size = model_bytes(setup["model"])
    scale, pace = setup["scale_mbps_per_unit"], setup.get("pace", 1.0)
    emu = {s: e for s, e in emulated(rows).items() if s in SCHEMES}
    skipped = [s for s in dict.fromkeys(r["scheme"] for r in rows) if s not in emu]
    schemes = []
    for scheme, e in emu.items():
        plan = plan_for(topo, scheme, e.seed) if scheme in ("inart", "r-inart", "atp",
                                                            "lbmm") else None
        # routing "dst": the collectives cross the links the emulation's switches route them on
        res = simulate(topo, scheme, plan=plan, model_bytes=size, scale_mbps=scale, pace=pace,
                       latency_us=latency_us, seed=e.seed, routing="dst",
                       host_overhead_us=host_overhead_us)
        errs = link_errors(e.link_bytes, res.link_bytes)
        worst = max(errs, key=errs.__getitem__, default=None)
        schemes.append({
            "scheme": scheme, "emu_comm_s": e.comm_s, "emu_sync_s": e.sync_s,
            "sim_comm_s": res.comm_time_s,
            "comm_ratio": res.comm_time_s / e.comm_s,
            "link_err_max": errs[worst] if worst else 0.0, "worst_link": worst,
            "links": len(errs),
            "emu_links_bytes": sum(e.link_bytes.values()),
            "sim_links_bytes": sum(res.link_bytes.values()),
            "runs": e.runs, "seed": e.seed,
            "per_link": {k: {"emu": e.link_bytes.get(k, 0.0), "sim": res.link_bytes.get(k, 0.0),
                             "err": v} for k, v in errs.items()},
        })
    emu_t = {s["scheme"]: s["emu_comm_s"] for s in schemes}
    sim_t = {s["scheme"]: s["sim_comm_s"] for s in schemes}
    swapped = swapped_pairs(emu_t, sim_t, tolerance)
    return {"setup": setup | {"model_bytes": size, "latency_us": latency_us,
                              "host_overhead_us": host_overhead_us},
            "tolerance": tolerance, "schemes": schemes, "skipped": skipped,
            "emu_order": order(emu_t), "sim_order": order(sim_t),
            "ordering_agrees": not swapped, "swapped": [f"{a}<{b}" for a, b in swapped]}


def figures(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One labelled line per scheme and measure, and one for the ordering."""
    topo, tol = result["setup"]["topology"], result["tolerance"]
    out = []
    for s in result["schemes"]:
        err = abs(s["comm_ratio"] - 1)
        out.append(_within(f"calibrate.comm[{topo}:{s['scheme']}]", err, tol,
                           emu_s=round(s["emu_comm_s"], 4), sim_s=round(s["sim_comm_s"], 4),
                           sim_over_emu=round(s["comm_ratio"], 3)))
        out.append(_within(f"calibrate.link_bytes[{topo}:{s['scheme']}]", s["link_err_max"],
                           tol, worst=s["worst_link"], links=s["links"]))
    n = len(result["swapped"])
    out.append({"name": f"calibrate.order[{topo}]", "value": float(n), "unit": "pairs",
                "goal": "<= 0", "ratio": float(n), "met": n == 0,
                "emulated": result["emu_order"], "simulated": result["sim_order"],
                "swapped": ",".join(result["swapped"]) or "none"})
    return out


def _within(name: str, err: float, tol: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "value": round(err, 4), "unit": "x", "goal": f"<= {tol:g}",
            "ratio": round(err / tol, 3), "met": err <= tol} | extra


def table(result: dict[str, Any]) -> str:
    return format_table([{
        "scheme": s["scheme"], "emu sync s": f"{s['emu_sync_s']:.4f}",
        "emu comm s": f"{s['emu_comm_s']:.4f}",
        "sim comm s": f"{s['sim_comm_s']:.4f}", "sim/emu": f"{s['comm_ratio']:.3f}",
        "link bytes max err": f"{s['link_err_max']:.3f}", "worst link": s["worst_link"] or "-",
        "emu/sim all links": f"{s['emu_links_bytes'] / s['sim_links_bytes']:.3f}"
        if s["sim_links_bytes"] else "-"} for s in result["schemes"]])


def configure(parser: argparse.ArgumentParser) -> None:
    from emulation.experiments.head_to_head import SCHEMES as H2H_DEFAULT
    from emulation.experiments.head_to_head import add_training_args

    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_training_args(parser, "calibrate", tuple(s for s in H2H_DEFAULT if s != "selective"),
                      "fig1, 6 rounds (what the tests run)")
    parser.add_argument("--from", dest="source", type=Path, metavar="HEAD_TO_HEAD.json",
                        help="a saved head-to-head instead of running one (no emulation)")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help="relative error each figure must stay within (default 0.1)")
    parser.add_argument("--latency-us", type=float, default=None,
                        help="simulated latency per link hop (default: the simulation's)")
    parser.add_argument("--host-overhead-us", type=float, default=None,
                        help="the collectives' host time per message (default: measured on "
                             "this machine after the emulation, as `inart bench "
                             "message-overhead` does; with --from "
                             f"{HOST_OVERHEAD_US:g}, measured on the saved runs' machine)")
    add_json(parser, "the comparison with per-link bytes")
    parser.set_defaults(func=run)


def load_head_to_head(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(setup, runs) of a saved ``head_to_head.json``; ValueError saying what is wrong."""
    try:
        doc = json.loads(Path(path).read_text())
        setup, rows = doc["setup"], doc["runs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a head-to-head JSON with 'setup' and 'runs' "
                         f"({exc})") from None
    if not isinstance(rows, list) or not isinstance(setup, dict):
        raise ValueError(f"{path}: not a head-to-head JSON with 'setup' and 'runs'")
    return setup, rows


def options(argv: list[str]) -> argparse.Namespace:
    """This benchmark's options parsed from ``argv`` (its defaults for the rest): how another
    command runs a calibration exactly as `inart bench calibrate` would."""
    parser = argparse.ArgumentParser(prog="inart bench calibrate")
    configure(parser)
    return parser.parse_args(argv)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The comparison ``args`` asks for: the head-to-head emulated here (root, Mininet) or
    read (``--from``), the hosts' time per message measured after the emulation unless given,
    and the simulation of it (``calibrate``); ``setup.host_overhead_source`` says where the
    hosts' time came from.  SystemExit with one line on bad input."""
    if not 0 < args.tolerance < 1:
        raise SystemExit(f"--tolerance {args.tolerance}: expected 0 < T < 1")
    if args.host_overhead_us is not None and not args.host_overhead_us >= 0:
        raise SystemExit(f"--host-overhead-us {args.host_overhead_us}: expected >= 0")
    overhead, source = args.host_overhead_us, "given"
    if args.source is not None:
        try:
            setup, rows = load_head_to_head(args.source)
        except ValueError as exc:
            raise SystemExit(f"--from {exc}") from None
    else:
        from emulation.experiments.head_to_head import train_all, write

        if args.quick:
            args.topology, args.rounds, args.eval_every = "fig1", 6, 3
        rows = train_all(args, args.scheme, "calibrate")
        write(rows, args.out, args)
        setup = json.loads((args.out / "head_to_head.json").read_text())["setup"]
        if overhead is None:
            from host_stack.collectives.bench_overhead import figure
            from host_stack.collectives.bench_overhead import measure as round_trips

            overhead = round(figure(round_trips(MEASURE_ROUND_TRIPS, 30, 4), 4)["value"], 1)
            source = "measured now on this machine"
    if overhead is None:
        overhead, source = HOST_OVERHEAD_US, "measured on the saved runs' machine"
    try:
        result = calibrate(setup, rows, args.tolerance, args.latency_us, overhead)
    except ValueError as exc:
        raise SystemExit(f"calibrate: {exc}") from None
    result["setup"]["host_overhead_source"] = source
    return result


def run(args: argparse.Namespace) -> int:
    result = measure(args)
    setup = result["setup"]
    print(f"\n{setup['topology']}, {setup['model']} ({setup['model_bytes']} B "
          f"gradient), {setup['scale_mbps_per_unit']} Mbit/s per unit, collectives' host "
          f"overhead {setup['host_overhead_us']:g} us per message "
          f"({setup['host_overhead_source']}), emulated vs simulated:")
    print(table(result))
    if result["skipped"]:
        print(f"not simulated: {', '.join(result['skipped'])}")
    figs = figures(result)
    for fig in figs:
        print(line(fig))
    if args.json:
        print(f"written: {write_json(args.json, result | {'figures': figs})}", file=sys.stderr)
    return 0
