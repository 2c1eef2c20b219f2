"""`inart plan`: solve a topology with one or all schemes and print one comparison table.

Every plan is written as OUT/<scheme>.json (inart.plan/1, what `inart install`, `inart train`
and the emulation take) and the table as OUT/plan.csv, OUT being --out (default out/plan);
--json and --csv write them elsewhere as well.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from tqdm import tqdm

from control_plane.model.topologies import PRESETS, build_topology, command_seed
from control_plane.model.topology import TopologyError
from control_plane.repo import out_dir
from control_plane.report import format_table, plan_row, to_csv
from control_plane.solver.solve import (
    MILP_MAX_FLOWS,
    PAPER_SCHEMES,
    ROUNDINGS,
    SCHEMES,
    any_plan_bound,
    solve,
)


def add_topology_args(parser: argparse.ArgumentParser) -> None:
    """Options that select a topology (shared by commands that take one)."""
    parser.add_argument("--topology", "-t", default="fig1",
                        help="fig1 | fattree:K | leafspine:L,S,H | irregular:SW,H | "
                             "FILE.json/.yaml")
    parser.add_argument("--ps", type=int, help="number of PSs (fattree/leafspine)")
    parser.add_argument("--workers", type=int, help="number of workers (default: all hosts)")
    parser.add_argument("--preset", choices=sorted(PRESETS), help="capacity preset")
    parser.add_argument("--seed", type=int, default=0, help="seed for PS choice and rounding")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("plan", help="solve a topology with InArt and its baselines",
                              description=__doc__)
    add_topology_args(p)
    p.add_argument("--scheme", "-s", default="all",
                   help=f"comma-separated from {', '.join(SCHEMES)}, or 'all'")
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
    p.add_argument("--json", type=Path,
                   help="write the plan (one scheme) or a directory of <scheme>.json (several)")
    p.add_argument("--csv", type=Path, help="write the table as CSV")
    p.add_argument("--out", type=Path, default=out_dir("plan"),
                   help="directory for <scheme>.json of every plan and plan.csv "
                        "(default %(default)s)")
    p.add_argument("--debug", action="store_true", help="log solver details (L-InArt KKT)")
    p.set_defaults(func=run)


def parse_schemes(text: str, flows: int) -> list[str]:
    if text == "all":
        extra = ["joint"] + (["milp"] if flows <= MILP_MAX_FLOWS else [])
        return list(PAPER_SCHEMES) + extra
    schemes = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in schemes if s not in SCHEMES]
    if bad:
        raise ValueError(f"--scheme: unknown {bad}; expected {', '.join(SCHEMES)} or 'all'")
    return schemes


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(message)s")
    logging.getLogger("highspy").setLevel(logging.WARNING)
    try:
        topo = build_topology(args.topology, ps=args.ps, workers=args.workers,
                              preset=args.preset, seed=command_seed(args.seed))
        schemes = parse_schemes(args.scheme, len(topo.workers) * len(topo.pss))
    except (TopologyError, ValueError) as exc:
        print(f"inart plan: {exc}", file=sys.stderr)
        return 2
    print(f"topology {topo.name}: {len(topo.workers)} workers, {len(topo.pss)} PSs, "
          f"{len(topo.switches)} switches, {len(topo.links) // 2} links")
    plans = []
    for scheme in tqdm(schemes, desc="solving", unit="scheme", file=sys.stderr,
                       disable=len(schemes) < 2):
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
    args.out.mkdir(parents=True, exist_ok=True)
    for p in plans:
        p.save(args.out / f"{p.scheme}.json")
    (args.out / "plan.csv").write_text(to_csv(rows))
    print(f"wrote {args.out / '<scheme>.json'} ({', '.join(p.scheme for p in plans)}) and "
          f"{args.out / 'plan.csv'}")
    if args.json:
        if len(plans) == 1:
            plans[0].save(args.json)
        else:
            args.json.mkdir(parents=True, exist_ok=True)
            for p in plans:
                p.save(args.json / f"{p.scheme}.json")
        print(f"plans written to {args.json}")
    if args.csv:
        args.csv.write_text(to_csv(rows))
        print(f"table written to {args.csv}")
    if args.debug:
        for p in plans:
            if "l_inart" in p.meta:
                print(json.dumps({"l_inart": p.meta["l_inart"]}, indent=1))
    return 0
