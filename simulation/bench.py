"""`inart bench simulate`: wall time and peak memory of `inart simulate` on a fat-tree at
100 Gbit/s (ResNet-50), every scheme, beside its goal; and sim/plan for the INA schemes.
Beside each wall time, the user and system CPU seconds it took (this process and any child it
waited for): on a loaded or small machine, system time (thread switches, page faults) is
where the same run differs from one machine to another.

Plans: solved here (their solve time is printed apart, it is the solver's figure), or taken
from ``--plan DIR`` (``DIR/<scheme>.json``, what ``inart plan --out DIR`` writes).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

from control_plane.cli.args import (
    add_json,
    add_plans,
    add_scheme,
    deprecate,
    load_plan,
    positive,
    write_json,
)
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
    add_scheme(parser, SCHEMES, "all")
    deprecate(parser, "--schemes", "--scheme")
    add_plans(parser, "`inart plan` files (repeatable; a directory: its <scheme>.json); "
                      "a scheme without one is solved")
    parser.add_argument("--link-gbps", type=positive(), default=100.0, metavar="GBPS")
    add_json(parser, "the figures and results")
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


def cpu_s() -> tuple[float, float]:
    """User and system CPU seconds so far, of this process and its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + kids.ru_utime, own.ru_stime + kids.ru_stime


def run(args: argparse.Namespace) -> int:
    schemes = args.scheme
    plans = given_plans(args.plan, schemes)
    topo = build_topology(f"fattree:{args.k}")
    name = f"fattree:{args.k}"
    figures, results = [], []
    for scheme in schemes:
        plan, solve_s = None, None
        if scheme in INA_SCHEMES:
            if scheme in plans:
                plan = plans[scheme]
            else:
                from control_plane.solver.solve import plan_for

                t0 = time.perf_counter()
                plan = plan_for(topo, scheme, 0)
                solve_s = time.perf_counter() - t0
        user0, sys0 = cpu_s()
        res = simulate(topo, scheme, plan=plan, model_bytes=BUILTIN["resnet50"].model_bytes,
                       link_gbps=args.link_gbps)
        user1, sys1 = cpu_s()
        results.append(res.to_dict() | {"solve_s": solve_s})
        figures.append(_figure(f"simulate.wall[{name} {scheme}]", res.wall_s, "s", "<=",
                               WALL_GOAL_S.get(args.k), user_s=round(user1 - user0, 1),
                               sys_s=round(sys1 - sys0, 1),
                               comm_ms=round(res.comm_time_s * 1e3, 3),
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
        _write(args.json if args.json != "-" else None, figures, results)
    figures.append(_figure(f"simulate.peak_rss[{name}]", _peak_gb(), "GB", "<=", RSS_GOAL_GB))
    print(_line(figures[-1]))
    _write(args.json, figures, results)
    return 0


def given_plans(paths: list[Path], schemes: list[str]) -> dict[str, Plan]:
    """--plan files (a directory: its <scheme>.json of ``schemes``) by scheme; InputError
    for a missing or unreadable one."""
    plans: dict[str, Plan] = {}
    for path in paths:
        files = ([path / f"{s}.json" for s in schemes if (path / f"{s}.json").is_file()]
                 if path.is_dir() else [path])
        for f in files:
            plan = load_plan(f)
            plans[plan.scheme] = plan
    return plans


def _write(path: str | None, figures: list[dict], results: list[dict]) -> None:
    """The JSON so far: rewritten after every scheme, so a long run that is stopped keeps
    what it measured."""
    if path:
        write_json(path, {"figures": figures, "results": results, "argv": sys.argv[1:]})


def _line(f: dict) -> str:
    goal = f"ratio {f['ratio']:.3f} goal {f['goal']} {'met' if f['met'] else 'NOT met'}" \
        if "goal" in f else ""
    extra = " ".join(f"{k}={v}" for k, v in f.items()
                     if k not in ("name", "value", "unit", "goal", "ratio", "met")
                     and v is not None)
    return f"{f['name']:40s} {f['value']:>10.4g} {f['unit']:3s} {goal} {extra}".rstrip()
