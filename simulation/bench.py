"""`inart bench simulate`: wall time and peak memory of `inart simulate` on a fat-tree at
100 Gbit/s (ResNet-50), every scheme, beside its goal; and sim/plan for the INA schemes.

Plans: solved here (their solve time is printed apart, it is the solver's figure), or taken
from ``--plans DIR`` (``DIR/<scheme>.json``, what ``inart plan --json DIR`` writes).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

from control_plane.model.plan import Plan
from control_plane.model.topologies import build_topology
from simulation.profiles import BUILTIN
from simulation.run import INA_SCHEMES, SCHEMES, simulate

WALL_GOAL_S = {16: 60.0, 32: 900.0}
RSS_GOAL_GB = 8.0
PLAN_GOAL = 1.01


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("-k", type=int, default=16, help="fat-tree k (16: 1,024 hosts)")
    parser.add_argument("--schemes", default="all", help="comma-separated, or 'all'")
    parser.add_argument("--plans", type=Path,
                        help="directory of <scheme>.json plans (a scheme without one is solved)")
    parser.add_argument("--link-gbps", type=float, default=100.0)
    parser.add_argument("--json", type=Path, help="write the figures and results")
    parser.set_defaults(func=run)


def _figure(name: str, value: float, unit: str, op: str | None = None,
            goal: float | None = None, **extra: object) -> dict:
    out: dict = {"name": name, "value": round(value, 4), "unit": unit}
    if goal is not None:
        out.update(goal=f"{op} {goal:g}", ratio=round(value / goal, 3),
                   met=value <= goal if op == "<=" else value >= goal)
    return out | extra


def _peak_gb() -> float:
    """Largest resident set of this process or of any simulation child it waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 2**20


def run(args: argparse.Namespace) -> int:
    schemes = list(SCHEMES) if args.schemes == "all" else args.schemes.split(",")
    topo = build_topology(f"fattree:{args.k}")
    name = f"fattree:{args.k}"
    figures, results = [], []
    for scheme in schemes:
        plan, solve_s = None, None
        if scheme in INA_SCHEMES:
            if args.plans and (args.plans / f"{scheme}.json").is_file():
                plan = Plan.load(args.plans / f"{scheme}.json")
            else:
                from control_plane.solver.solve import plan_for

                t0 = time.perf_counter()
                plan = plan_for(topo, scheme, 0)
                solve_s = time.perf_counter() - t0
        res = simulate(topo, scheme, plan=plan, model_bytes=BUILTIN["resnet50"].model_bytes,
                       link_gbps=args.link_gbps)
        results.append(res.to_dict() | {"solve_s": solve_s})
        figures.append(_figure(f"simulate.wall[{name} {scheme}]", res.wall_s, "s", "<=",
                               WALL_GOAL_S.get(args.k), comm_ms=round(res.comm_time_s * 1e3, 3),
                               solve_s=None if solve_s is None else round(solve_s, 1),
                               load=round(os.getloadavg()[0], 1),
                               host_us=None if scheme in INA_SCHEMES
                               else res.host_overhead_us, note=res.note or None))
        print(_line(figures[-1]), flush=True)
        if res.plan_comm_time_s:  # the plan's check: its gradients alone, as the plan models
            grads = simulate(topo, scheme, plan=plan, link_gbps=args.link_gbps,
                             model_bytes=BUILTIN["resnet50"].model_bytes, results=False)
            figures.append(_figure(f"simulate.sim/plan[{name} {scheme}]",
                                   grads.comm_time_s / grads.plan_comm_time_s, "x", "<=",
                                   PLAN_GOAL, with_results=round(
                                       res.comm_time_s / res.plan_comm_time_s, 4)))
            print(_line(figures[-1]), flush=True)
        _write(args.json, figures, results)
    figures.append(_figure(f"simulate.peak_rss[{name}]", _peak_gb(), "GB", "<=", RSS_GOAL_GB))
    print(_line(figures[-1]))
    _write(args.json, figures, results)
    return 0


def _write(path: Path | None, figures: list[dict], results: list[dict]) -> None:
    """The JSON so far: rewritten after every scheme, so a long run that is stopped keeps
    what it measured."""
    if path:
        path.write_text(json.dumps({"figures": figures, "results": results,
                                    "argv": sys.argv[1:]}, indent=1) + "\n")


def _line(f: dict) -> str:
    goal = f"ratio {f['ratio']:.3f} goal {f['goal']} {'met' if f['met'] else 'NOT met'}" \
        if "goal" in f else ""
    extra = " ".join(f"{k}={v}" for k, v in f.items()
                     if k not in ("name", "value", "unit", "goal", "ratio", "met")
                     and v is not None)
    return f"{f['name']:40s} {f['value']:>10.4g} {f['unit']:3s} {goal} {extra}".rstrip()
