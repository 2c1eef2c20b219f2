"""`inart plan`: solve a topology with one or all schemes and print one comparison table.

Every plan is written as OUT/<scheme>.json (inart.plan/1, what `inart install`, `inart train`
and the emulation take) and the table as OUT/plan.csv, OUT being --out (default out/plan); a
run first removes the files the previous run wrote there.  --json PATH writes the plan (one
scheme) or {scheme: plan} (several) elsewhere as well, --json alone prints it; --csv the table.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from control_plane.cli.args import (
    InputError,
    add_json,
    add_out,
    add_quiet,
    add_scheme,
    add_topology,
    fresh_out,
    progress,
    record_outputs,
    warn,
    write_json,
)
from control_plane.model.topologies import PRESETS, build_topology, command_seed
from control_plane.model.topology import TopologyError
from control_plane.report import format_table, plan_row, to_csv
from control_plane.solver.solve import (
    MILP_MAX_FLOWS,
    ROUNDINGS,
    SCHEMES,
    any_plan_bound,
    solve,
)


def add_topology_args(parser: argparse.ArgumentParser) -> None:
    """Options that select a topology (shared by commands that take one)."""
    add_topology(parser)
    parser.add_argument("--ps", type=int, help="number of PSs (fattree/leafspine)")
    parser.add_argument("--workers", type=int, help="number of workers (default: all hosts)")
    parser.add_argument("--preset", choices=sorted(PRESETS), help="capacity preset")
    parser.add_argument("--seed", type=int, default=0, help="seed for PS choice and rounding")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("plan", help="solve a topology with InArt and its baselines",
                              description=__doc__)
    add_topology_args(p)
    add_scheme(p, SCHEMES, "all", help_text=f"a group keeps milp to {MILP_MAX_FLOWS} "
                                            "worker-PS flows")
    p.add_argument("--k-paths", type=int, default=3,
                   help="minimum-hop paths per (source, destination); InArt's schemes plan "
                        "small graphs with few simple paths (irregular clusters, not "
                        "fat-trees) over every simple path instead")
    p.add_argument("--trials", type=int, default=32,
                   help="Alg. 2 rounding trials, best kept (--rounding paper)")
    p.add_argument("--rounding", choices=ROUNDINGS, default="best",
                   help="best: count LP and the packing it guides, with a split search; "
                        "paper: Alg. 2's randomized rounding of LP-InArt, as published")
    p.add_argument("--unit-mbps", type=float, default=1.0,
                   help="Mbit/s per topology unit, for communication times")
    add_json(p, "the plan (one scheme) or {scheme: plan} (several)")
    p.add_argument("--csv", type=Path, metavar="PATH", help="write the table as CSV to PATH")
    add_out(p, "plan", "<scheme>.json of every plan and plan.csv")
    add_quiet(p)
    p.add_argument("--debug", action="store_true", help="log solver details (L-InArt KKT)")
    p.set_defaults(func=run)


def fit_schemes(schemes: list[str], flows: int) -> list[str]:
    """``schemes`` less milp where a group (all, ina) asked for it and the MILP is too big to
    solve (named, it is solved whatever the size)."""
    if "milp" in schemes and getattr(schemes, "grouped", False) and len(schemes) > 1 and \
            flows > MILP_MAX_FLOWS:
        warn(f"plan: milp left out ({flows} worker-PS flows > {MILP_MAX_FLOWS}); "
             f"-s milp solves it anyway")
        return [s for s in schemes if s != "milp"]
    return schemes


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(message)s")
    logging.getLogger("highspy").setLevel(logging.WARNING)
    try:
        topo = build_topology(args.topology, ps=args.ps, workers=args.workers,
                              preset=args.preset, seed=command_seed(args.seed))
    except TopologyError as exc:
        raise InputError(f"--topology {args.topology}: {exc}") from exc
    schemes = fit_schemes(args.scheme, len(topo.workers) * len(topo.pss))
    print(f"topology {topo.name}: {len(topo.workers)} workers, {len(topo.pss)} PSs, "
          f"{len(topo.switches)} switches, {len(topo.links) // 2} links")
    plans = []
    for scheme in progress(schemes, desc="solving", unit="scheme",
                           quiet=args.quiet or len(schemes) < 2):
        plans.append(solve(topo, scheme, seed=args.seed, k_paths=args.k_paths,
                           trials=args.trials, rounding=args.rounding))
    rows = [plan_row(p, args.unit_mbps) for p in plans]
    reference = any_plan_bound(topo)
    for row, p in zip(rows, plans, strict=True):
        bound = p.upper_bound if p.upper_bound is not None else reference
        row["rate/bound"] = round(p.rate / bound, 3) if bound > 0 else None
    print(format_table(rows))
    print(f"rate/bound: the rate over the plan's upper_bound; where a plan has none, over "
          f"{reference:.4g} (Eq. 2's optimum or the least worker uplink: no plan exceeds it)")
    out = fresh_out(args.out)
    written = [out / f"{p.scheme}.json" for p in plans] + [out / "plan.csv"]
    for p, path in zip(plans, written, strict=False):
        p.save(path)
    written[-1].write_text(to_csv(rows))
    record_outputs(out, written)
    print(f"wrote {out / '<scheme>.json'} ({', '.join(p.scheme for p in plans)}) and "
          f"{out / 'plan.csv'}")
    if args.json and len(plans) > 1 and (args.json.endswith("/") or Path(args.json).is_dir()):
        warn(f"--json DIR for several plans is deprecated; use --out DIR (every plan is "
             f"OUT/<scheme>.json), or --json {args.json.rstrip('/')}.json for one file")
        Path(args.json).mkdir(parents=True, exist_ok=True)
        for p in plans:
            p.save(Path(args.json) / f"{p.scheme}.json")
        print(f"plans written to {args.json}")
    elif args.json:
        data = (plans[0].to_dict() if len(plans) == 1
                else {p.scheme: p.to_dict() for p in plans})
        where = write_json(args.json, data)
        if where != "stdout":
            print(f"plans written to {where}")
    if args.csv:
        args.csv.write_text(to_csv(rows))
        print(f"table written to {args.csv}")
    if args.debug:
        for p in plans:
            if "l_inart" in p.meta:
                print(json.dumps({"l_inart": p.meta["l_inart"]}, indent=1))
    return 0
