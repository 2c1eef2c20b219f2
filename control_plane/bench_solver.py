"""`inart bench solver`: solve time and rate of every scheme on fat-trees, side by side.

Prints per size: each scheme's rate and solve time, inart with Alg. 2's rounding only
("inart_paper"), inart/atp and inart/upper_bound, and two LP-InArt formulations timed in the
same run: the naive path LP (every switch a candidate, dual simplex) and our compact one,
with their bounds.  A "joint vs inart" table sets our `joint` against `inart` (joint/inart,
and whether joint kept inart's plan) on fig1, every fat-tree above and seeded heterogeneous
leaf-spines.  With --milp N it also solves N small random instances exactly and splits the
gap to the LP bound into relaxation (MILP/LP) and rounding (inart/MILP).
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
from control_plane.plan import Plan
from control_plane.report import format_table
from control_plane.solve import solve
from control_plane.topologies import fattree, fig1, leafspine
from control_plane.topology import Topology

SCHEMES = ("lbmm", "atp", "r-inart", "inart", "joint")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="4,6,8", help="fat-tree k values (e.g. 4,6,8,16)")
    parser.add_argument("--preset", default="homogeneous,heterogeneous")
    parser.add_argument("--ps", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--milp", type=int, default=20, help="small instances vs exact MILP")
    parser.add_argument("--leafspines", nargs="+", default=["4,2,4", "3,2,3", "4,3,3"],
                        metavar="L,S,H", help="heterogeneous leaf-spines for joint vs inart")
    parser.add_argument("--leafspine-seeds", type=int, default=4,
                        help="seeds 1..N of each heterogeneous leaf-spine")
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
    row.update(joint_columns(plans["inart"], plans["joint"]))
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


def joint_columns(inart: Plan, joint: Plan) -> dict:
    """joint/inart and how joint got there: inart's plan kept, or the search steps that won."""
    return {"joint/inart": round(joint.rate / inart.rate, 4),
            "joint_kept": joint.meta["joint"]["kept"],
            "joint_steps": ",".join(joint.meta["joint"]["steps"]) or "-",
            "joint_ub": round(joint.upper_bound, 3)}


def bench_joint(name: str, preset: str, topo: Topology, seed: int) -> dict:
    """One instance of the joint vs inart table."""
    paths = PathSets(topo)
    inart = solve(topo, "inart", seed=seed, paths=paths)
    joint = solve(topo, "joint", seed=seed, paths=paths)
    return {"topology": name, "preset": preset,
            "inart_rate": round(inart.rate, 4), "joint_rate": round(joint.rate, 4),
            **joint_columns(inart, joint), "joint_s": joint.meta["solve_seconds"]}


def joint_table(size_rows: list[dict], leafspines: list[str], seeds: int, seed: int) -> list[dict]:
    """fig1, the fat-trees already solved in `size_rows`, then seeded heterogeneous leaf-spines."""
    keys = ("topology", "preset", "inart_rate", "joint_rate", "joint/inart", "joint_kept",
            "joint_steps", "joint_ub", "joint_s")
    rows = [bench_joint("fig1", "paper", fig1(), seed)]
    rows += [{k: r[k] for k in keys} for r in size_rows]
    for spec in leafspines:
        shape = [int(x) for x in spec.split(",")]
        for n in range(1, seeds + 1):
            topo = leafspine(*shape, ps=2, preset="heterogeneous", seed=n)
            rows.append(bench_joint(f"leafspine:{spec} seed {n}", "heterogeneous", topo, seed))
    return rows


def joint_summary(rows: list[dict]) -> dict:
    """joint/inart over all instances; the goal is >= 1 on every one."""
    ratios = [r["joint/inart"] for r in rows]
    return {"instances": len(ratios), "joint>=inart": sum(x >= 1 - 1e-6 for x in ratios),
            "joint>inart": sum(x > 1 + 1e-6 for x in ratios), "joint/inart_min": min(ratios),
            "joint/inart_mean": round(sum(ratios) / len(ratios), 4),
            "joint/inart_max": max(ratios), "goal": "joint/inart >= 1 on every instance"}


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
        "inart_paper_rate", "inart_ub", "inart/atp", "inart/ub", "joint/inart"]
    print("\nRates (topology units)\n" + format_table(rows, cols))
    tcols = ["topology", "preset"] + [f"{s}_s" for s in SCHEMES] + [
        "lp_naive_s", "lp_compact_s", "naive/compact_time", "lp_naive_bound", "lp_compact_bound"]
    print("\nSolve times (s) and LP formulations\n" + format_table(rows, tcols))
    result: dict = {"sizes": rows}
    joint_rows = joint_table(rows, args.leafspines, args.leafspine_seeds, args.seed)
    result["joint_vs_inart"] = {"rows": joint_rows, "summary": joint_summary(joint_rows)}
    print("\nJoint vs inart (topology units)\n" + format_table(joint_rows))
    print(f"joint vs inart: {json.dumps(result['joint_vs_inart']['summary'])}")
    if args.milp:
        result["milp"] = bench_milp(args.milp, args.seed)
        print(f"\nRounding vs exact MILP: {json.dumps(result['milp'])}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0
