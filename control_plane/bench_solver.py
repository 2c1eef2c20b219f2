"""`inart bench solver`: solve time and rate of every scheme on fat-trees, side by side.

Prints per size: each scheme's rate and solve time, inart with Alg. 2's rounding only
("inart_paper"), inart/atp and inart/upper_bound, and two LP-InArt formulations timed in the
same run: the naive path LP (every switch a candidate, dual simplex) and our compact one,
with their bounds.  With --milp N it also solves N small random instances exactly and splits
the gap to the LP bound into relaxation (MILP/LP) and rounding (inart/MILP).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from tqdm import tqdm

from control_plane.lp_inart import InArtLP
from control_plane.paths import PathSets
from control_plane.report import format_table
from control_plane.solve import solve
from control_plane.topologies import fattree, leafspine

SCHEMES = ("lbmm", "atp", "r-inart", "inart", "joint")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="4,6,8", help="fat-tree k values (e.g. 4,6,8,16)")
    parser.add_argument("--preset", default="homogeneous,heterogeneous")
    parser.add_argument("--ps", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--milp", type=int, default=20, help="small instances vs exact MILP")
    parser.add_argument("--naive-max-k", type=int, default=6,
                        help="time the naive path LP only up to this fat-tree k (it takes "
                             "minutes beyond k=6)")
    parser.add_argument("--json", type=Path, help="write all measurements as JSON")
    parser.set_defaults(func=run)


def bench_size(k: int, preset: str, ps: int, seed: int, naive: bool = True) -> dict:
    topo = fattree(k, ps=ps, preset=preset, seed=seed)
    paths = PathSets(topo)
    row: dict = {"topology": f"fattree:{k}", "preset": preset, "workers": len(topo.workers)}
    plans = {}
    for scheme in SCHEMES:
        plan = solve(topo, scheme, seed=seed, paths=paths)
        plans[scheme] = plan
        row[f"{scheme}_rate"] = round(plan.rate, 3)
        row[f"{scheme}_s"] = plan.meta["solve_seconds"]
    paper = solve(topo, "inart", seed=seed, paths=paths, rounding="paper")
    row["inart_paper_rate"] = round(paper.rate, 3)
    row["inart_ub"] = round(plans["inart"].upper_bound, 3)
    row["inart/atp"] = round(plans["inart"].rate / plans["atp"].rate, 3)
    row["inart/ub"] = round(plans["inart"].rate / plans["inart"].upper_bound, 3)
    equal = {s: 1 / len(topo.pss) for s in topo.pss}
    for form in ("naive", "compact") if naive else ("compact",):
        t0 = time.perf_counter()
        lp = InArtLP(topo, paths, formulation=form).solve(equal)
        row[f"lp_{form}_s"] = round(time.perf_counter() - t0, 3)
        row[f"lp_{form}_bound"] = round(lp.rate, 4)
    if naive:
        row["naive/compact_time"] = round(row["lp_naive_s"] / max(row["lp_compact_s"], 1e-9), 2)
    return row


def bench_milp(count: int, seed: int) -> dict:
    """Where the gap to the LP bound comes from: relaxation (MILP/LP) or rounding (inart/MILP)."""
    rng = random.Random(seed)
    rounding, relaxation, proven = [], [], 0
    for i in tqdm(range(count), desc="inart vs exact MILP", file=sys.stderr):
        topo = leafspine(rng.randint(2, 3), rng.randint(1, 2), rng.randint(2, 3), ps=2,
                         preset=rng.choice(["homogeneous", "heterogeneous"]), seed=seed + i)
        paths = PathSets(topo)
        milp = solve(topo, "milp", paths=paths)
        exact = milp.rate
        proven += bool(milp.meta["milp_optimal"])
        lp_bound = InArtLP(topo, paths, joint=True).solve().rate
        rounding.append(solve(topo, "inart", seed=seed + i, paths=paths).rate / exact)
        relaxation.append(exact / lp_bound)
    mean = lambda xs: round(sum(xs) / len(xs), 4)  # noqa: E731
    return {"instances": count, "milp_proven_optimal": proven,
            "inart/milp_mean": mean(rounding),
            "inart/milp_min": round(min(rounding), 4),
            "milp/lp_mean": mean(relaxation), "milp/lp_min": round(min(relaxation), 4)}


def run(args: argparse.Namespace) -> int:
    sizes = [int(k) for k in args.sizes.split(",")]
    presets = args.preset.split(",")
    rows = []
    for k in sizes:
        for preset in presets:
            print(f"fattree:{k} {preset} ...", file=sys.stderr, flush=True)
            rows.append(bench_size(k, preset, args.ps, args.seed, k <= args.naive_max_k))
            print(format_table(rows[-1:]), flush=True)
    cols = ["topology", "preset", "workers"] + [f"{s}_rate" for s in SCHEMES] + [
        "inart_paper_rate", "inart_ub", "inart/atp", "inart/ub"]
    print("\nRates (topology units)\n" + format_table(rows, cols))
    tcols = ["topology", "preset"] + [f"{s}_s" for s in SCHEMES] + [
        "lp_naive_s", "lp_compact_s", "naive/compact_time", "lp_naive_bound", "lp_compact_bound"]
    print("\nSolve times (s) and LP formulations\n" + format_table(rows, tcols))
    result = {"sizes": rows}
    if args.milp:
        result["milp"] = bench_milp(args.milp, args.seed)
        print(f"\nRounding vs exact MILP: {json.dumps(result['milp'])}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0
