"""`inart bench solver`: plan quality and solve time of every scheme, side by side.

Tables:
- fat-trees (`--sizes`, `--preset`, `--seeds`): each scheme's rate and solve time,
  inart/atp and inart/upper_bound (the count LP's bound for inart's split), the binding
  constraint, and where the gap comes from: the paper's LP-InArt optimum for L-InArt's split
  (the bound the paper's rounding works against), the count LP's bound for that split, the
  first packing, and the plan after the split search;
- `--random N`: N seeded heterogeneous leaf-spines, irregular switch graphs and small
  fat-trees, each solved exactly (MILP) where it fits, with inart/MILP per instance, its mean
  and min, and the seeds of the worst instances (to rerun one: `inart plan` with the printed
  topology options).  The MILP routes over every simple path with every switch a candidate
  (`milp_paths`; fat-trees, with thousands per pair: minimum-hop paths), over installable
  segments only, as every scheme (model/unaggregated.py), and each row and summary says
  which path set it used;
- `--lp-timing`: the naive path LP against our compact one, timed in the same run;
- last, one labelled line per figure with its goal (figures.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from control_plane.bench.figures import fattree_figures, line, random_figure, scale_figures
from control_plane.cli.args import add_json, add_quiet, add_scheme, add_seeds, deprecate, write_json
from control_plane.cli.args import progress as progress_bar
from control_plane.model.plan import Plan
from control_plane.model.topologies import fattree, irregular, leafspine
from control_plane.model.topology import Topology
from control_plane.repo import child_env
from control_plane.report import format_table
from control_plane.solver.baselines import equal_split
from control_plane.solver.l_inart import l_inart
from control_plane.solver.lp_inart import InArtLP
from control_plane.solver.milp import solve_milp
from control_plane.solver.paths import PathSets, exact_paths, simple_paths_at_most
from control_plane.solver.solve import LP_MAX_FLOWS, MILP_MAX_FLOWS, default_paths, solve
from control_plane.solver.split_bound import free_split_bound

SCHEMES = ("lbmm", "atp", "r-inart", "inart", "joint")
WORST = 5  # worst instances listed by seed
PROVEN_GAP = 0.005  # an exact MILP's plan this close to free_ub counts as proven optimal
EXACT_PATHS = 256  # simple paths per pair up to which the exact MILP routes over all of them


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="4,6,8", help="fat-tree k values (e.g. 4,6,8,16); "
                        "'' for none")
    parser.add_argument("--preset", default="homogeneous,heterogeneous")
    parser.add_argument("--ps", type=int, default=4)
    add_seeds(parser, "0", "fat-tree seeds")
    add_scheme(parser, SCHEMES, ",".join(SCHEMES),
               help_text="schemes of the fat-tree table (inart and atp always run)")
    deprecate(parser, "--schemes", "--scheme")
    parser.add_argument("--paper", action="store_true",
                        help="also inart with --rounding paper (Alg. 2), in the fat-tree table")
    parser.add_argument("--random", type=int, default=0, metavar="N",
                        help="N seeded heterogeneous instances of each --shapes vs the MILP")
    parser.add_argument("--shapes", default=",".join(SHAPES),
                        help=f"shapes of the random instances, from {', '.join(SHAPES)}")
    parser.add_argument("--random-seed", type=int, default=0, help="first instance seed")
    parser.add_argument("--milp-time", type=float, default=60.0,
                        help="time limit per exact MILP (s); unproven ones are marked")
    parser.add_argument("--jobs", type=int, default=1, help="random instances in parallel")
    parser.add_argument("--lp-timing", action="store_true",
                        help="time the naive path LP against the compact one (fat-trees k<=6)")
    parser.add_argument("--plan-scale", default="", metavar="K,K",
                        help="fat-tree sizes (e.g. 16,32) to time `inart plan` at, one fresh "
                             "process per scheme of --plan-schemes: wall time, peak memory and "
                             "rate/bound against the goals")
    parser.add_argument("--plan-schemes", default="inart,atp,lbmm")
    parser.add_argument("--plan-timeout", type=float, default=1800.0,
                        help="seconds before a --plan-scale run is stopped (reported as such)")
    add_json(parser, "all measurements")
    add_quiet(parser)
    parser.set_defaults(func=run)


def parse_seeds(text: str) -> list[int]:
    """'3' -> [3]; '0-4' -> [0..4]; '1,5' -> [1, 5]."""
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(x) for x in text.split(",") if x]


def breakdown(plan: Plan) -> dict:
    """Where inart's plan stands: first count LP bound and packing, split search, binding."""
    steps = (plan.meta.get("count_lp") or {}).get("steps") or []
    first = steps[0] if steps else {}
    return {"count_bound_first": _r(first.get("bound")),
            "packed_first": _r(first.get("packed")),
            "count_lps": len(steps),
            "binding": plan.meta.get("binding")}


def _r(x: float | None, n: int = 4) -> float | None:
    return None if x is None else round(x, n)


def skipped(scheme: str, topo: Topology) -> str | None:
    """Why the bench does not run `scheme` on `topo` (None: it does).  joint solves LP-InArt
    with a free split over every worker-PS pair; on fattree:16 (4080 pairs) that LP alone
    runs for many minutes, so the bench would seem to hang."""
    pairs = len(topo.workers) * len(topo.pss)
    if scheme == "joint" and pairs > LP_MAX_FLOWS:
        return (f"joint skipped: its LP (LP-InArt, free split) over {pairs} worker-PS pairs is "
                f"too large (above {LP_MAX_FLOWS}, where inart packs without its LP)")
    return None


def bench_fattree(k: int, preset: str, ps: int, seed: int, schemes: list[str],
                  paper: bool) -> dict:
    """One fat-tree row: rates, times, ratios and inart's breakdown."""
    t0, c0 = time.perf_counter(), time.process_time()
    topo = fattree(k, ps=ps, preset=preset, seed=seed)
    paths = PathSets(topo)
    row: dict = {"topology": f"fattree:{k}", "preset": preset, "seed": seed,
                 "workers": len(topo.workers)}
    plans = {}
    for scheme in dict.fromkeys(["inart", "atp", *schemes]):  # inart first: fresh path sets
        reason = skipped(scheme, topo)
        if reason:
            row[f"{scheme}_rate"] = row[f"{scheme}_s"] = None
            row.setdefault("skipped", []).append(reason)
            print(f"  {reason}", file=sys.stderr, flush=True)
            continue
        start = time.perf_counter()
        plans[scheme] = solve(topo, scheme, seed=seed, paths=paths)
        row[f"{scheme}_rate"] = round(plans[scheme].rate, 4)
        row[f"{scheme}_s"] = round(time.perf_counter() - start, 3)
        if scheme == "inart":  # end to end: topology, path sets and the solve
            row["inart_e2e_s"] = round(time.perf_counter() - t0, 3)
            row["inart_e2e_cpu_s"] = round(time.process_time() - c0, 3)
    inart = plans["inart"]
    if paper:
        p = solve(topo, "inart", seed=seed, paths=paths, rounding="paper")
        row["inart_paper_rate"] = round(p.rate, 4)
        row["paper_lp"] = round(p.meta["lp_first_rate"], 4)
    row["inart_ub"] = _r(inart.upper_bound)
    row["inart/atp"] = round(inart.rate / plans["atp"].rate, 3)
    row["inart/ub"] = round(inart.rate / inart.upper_bound, 3)
    row.update(breakdown(inart))
    return row


SHAPES = ("leafspine", "irregular", "fattree")


def random_instance(seed: int, shape: str = "leafspine") -> tuple[str, Topology]:
    """A seeded heterogeneous instance small enough for the exact MILP, of one shape:
    `leafspine`: 2-4 leaves, 2 spines, 2-3 hosts per leaf, 2 PSs; `irregular`: a random
    switch graph with cycles (5-7 switches, 6-8 workers, 2 PSs on random switches);
    `fattree`: a fattree:4 with 2 PSs and 4-6 workers.  The returned options rebuild it
    with `inart plan`."""
    if shape not in SHAPES:
        raise ValueError(f"shape '{shape}': expected one of {SHAPES}")
    rng = random.Random(f"{shape}:{seed}")
    if shape == "leafspine":
        leaves, hosts = rng.randint(2, 4), rng.randint(2, 3)
        spec = f"-t leafspine:{leaves},2,{hosts} --ps 2"
        topo = leafspine(leaves, 2, hosts, ps=2, preset="heterogeneous", seed=seed)
    elif shape == "irregular":
        switches, workers = rng.randint(5, 7), rng.randint(6, 8)
        spec = f"-t irregular:{switches},{workers + 2} --ps 2"
        topo = irregular(switches, workers + 2, ps=2, preset="heterogeneous", seed=seed)
    else:
        workers = rng.randint(4, 6)
        spec = f"-t fattree:4 --ps 2 --workers {workers}"
        topo = fattree(4, ps=2, workers=workers, preset="heterogeneous", seed=seed)
    # `inart plan --seed S` draws with the builders' seed S + 1 (command_seed)
    again = f"--seed {seed - 1}" if seed >= 1 else "(builders' seed 0: no --seed draws it)"
    return f"{spec} --preset heterogeneous {again}", topo


def milp_paths(topo: Topology) -> PathSets:
    """The exact MILP's path sets: every simple path with every switch a candidate (a real
    optimum may go around a cycle, or aggregate off every shortest path), where the graph
    has at most EXACT_PATHS simple paths per pair; fat-trees have thousands, and there the
    MILP keeps minimum-hop paths (ECMP's), every switch still a candidate."""
    if simple_paths_at_most(topo, EXACT_PATHS):
        return exact_paths(topo)
    return PathSets(topo, candidates="any")


def bench_random(seed: int, milp_time: float, shape: str = "leafspine") -> dict:
    """One random instance: inart (and r-inart, paper) against the exact MILP and bounds."""
    spec, topo = random_instance(seed, shape)
    paths = default_paths(topo)
    row: dict = {"shape": shape, "seed": seed, "instance": spec, "workers": len(topo.workers)}
    inart = solve(topo, "inart", seed=seed)  # default paths: also tries minimum-hop ones
    row["inart_paths"] = "min-hop" if "paths" in inart.meta else paths.routes
    row["inart"] = round(inart.rate, 4)
    row["inart_s"] = inart.meta["solve_seconds"]
    row["polished"] = (inart.meta.get("milp_polish") or {}).get("kept", False)
    row["r-inart"] = round(solve(topo, "r-inart", seed=seed).rate, 4)
    row["paper"] = round(solve(topo, "inart", seed=seed, paths=paths, rounding="paper").rate, 4)
    row["atp"] = round(solve(topo, "atp").rate, 4)
    row["count_ub"] = _r(inart.upper_bound)
    exact = milp_paths(topo)
    row["milp_paths"], row["milp_path_set"] = exact.routes, exact.describe
    joint_lp = InArtLP(topo, exact, joint=True).solve().rate
    row["lp_ub"] = round(joint_lp, 4)  # LP-InArt, split free, the MILP's paths: bounds it
    free_bound = min(joint_lp, l_inart(topo).rate)
    if len(topo.workers) * len(topo.pss) <= MILP_MAX_FLOWS:
        t0 = time.perf_counter()
        milp = solve_milp(topo, exact, time_limit=milp_time, start=inart)
        row["milp"] = round(milp.rate, 4)
        row["milp_s"] = round(time.perf_counter() - t0, 1)
        row["inart/milp"] = round(inart.rate / milp.rate, 4)
        # every plan of every split is under free_ub: inart/free_ub <= inart/optimum
        ub = min(free_split_bound(topo, exact, max(milp.rate, inart.rate)), free_bound)
        row["free_ub"] = round(ub, 4)
        row["inart/free_ub"] = round(inart.rate / ub, 4)
        row["milp/free_ub"] = round(milp.rate / ub, 4)
        # proven: HiGHS closed the gap, or the plan is within PROVEN_GAP of free_ub
        row["proven"] = bool(milp.meta["milp_optimal"]) or milp.rate >= ub * (1 - PROVEN_GAP)
    row["inart/count_ub"] = round(inart.rate / inart.upper_bound, 4)
    row["binding"] = inart.meta["binding"]
    row.update({k: v for k, v in breakdown(inart).items() if k != "binding"})
    return row


def random_summary(rows: list[dict]) -> dict:
    """inart/MILP over the instances (goal: >= 0.97 on every one), worst seeds first."""
    with_milp = [r for r in rows if "inart/milp" in r]
    ratios = [r["inart/milp"] for r in with_milp]
    worst = sorted(with_milp, key=lambda r: r["inart/milp"])[:WORST]
    out = {"instances": len(rows), "with_milp": len(with_milp),
           "milp_proven": sum(r["proven"] for r in with_milp),
           "milp_path_sets": sorted({r.get("milp_path_set", "") for r in with_milp})}
    if ratios:
        out.update({"inart/milp_mean": round(sum(ratios) / len(ratios), 4),
                    "inart/milp_min": min(ratios),
                    ">=0.97": sum(x >= 0.97 - 1e-9 for x in ratios),
                    "paper/milp_mean": round(sum(r["paper"] / r["milp"] for r in with_milp)
                                             / len(with_milp), 4),
                    "worst": [(r["seed"], r["inart/milp"]) for r in worst],
                    "inart/free_ub_min": min((r["inart/free_ub"] for r in with_milp
                                              if "inart/free_ub" in r), default=None),
                    "milp/free_ub>=0.99": sum(r.get("milp/free_ub", 0) >= 0.99
                                              for r in with_milp),
                    "goal": "inart/milp >= 0.97 on every instance"})
    return out


def plan_scale(k: int, scheme: str, timeout: float) -> dict:
    """`inart plan -t fattree:K -s SCHEME` in a fresh process (what a user runs, topology
    and path sets included): its wall time, its peak resident memory (the child's own
    ru_maxrss, from wait4) and the plan's rate against its bound."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "control_plane.cli", "plan", "-t", f"fattree:{k}",
               "-s", scheme, "--out", out]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=child_env())
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        row: dict = {"topology": f"fattree:{k}", "scheme": scheme,
                     "wall_s": round(time.perf_counter() - t0, 1),
                     "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                     "peak_gb": round(usage.ru_maxrss / 2**20, 3), "rc": proc.returncode}
        plan_file = Path(out) / f"{scheme}.json"
        if proc.returncode == 0 and plan_file.exists():
            data = json.loads(plan_file.read_text())
            row["rate"] = round(data["rate"], 4)
            row["upper_bound"] = _r(data.get("upper_bound"))
            csv_rows = (Path(out) / "plan.csv").read_text().splitlines()
            header, values = csv_rows[0].split(","), csv_rows[1].split(",")
            row["rate/bound"] = float(values[header.index("rate/bound")])
        else:
            row["error"] = output.strip().splitlines()[-1:] or ["killed"]
    return row


def lp_timing(k: int, preset: str, ps: int, seed: int) -> dict:
    """The naive path LP (every switch a candidate, dual simplex) against the compact one."""
    topo = fattree(k, ps=ps, preset=preset, seed=seed)
    paths = PathSets(topo)
    row: dict = {"topology": f"fattree:{k}", "preset": preset}
    for form in ("naive", "compact"):
        t0 = time.perf_counter()
        lp = InArtLP(topo, paths, formulation=form).solve(equal_split(topo))
        row[f"lp_{form}_s"] = round(time.perf_counter() - t0, 3)
        row[f"lp_{form}_bound"] = round(lp.rate, 4)
    row["naive/compact_time"] = round(row["lp_naive_s"] / max(row["lp_compact_s"], 1e-9), 2)
    return row


def run(args: argparse.Namespace) -> int:
    sizes = [int(k) for k in args.sizes.split(",") if k]
    presets = [p for p in args.preset.split(",") if p]
    schemes = list(args.scheme)
    result: dict = {}
    rows: list[dict] = []
    figures: list[dict] = []
    for k in sizes:
        for preset in presets:
            for seed in args.seeds:
                print(f"fattree:{k} {preset} seed {seed} ...", file=sys.stderr, flush=True)
                rows.append(bench_fattree(k, preset, args.ps, seed, schemes, args.paper))
    if rows:
        result["fattrees"] = rows
        cols = ["topology", "preset", "seed", "workers"] + [
            f"{s}_rate" for s in dict.fromkeys(["inart", "atp", *schemes])] + (
            ["inart_paper_rate"] if args.paper else []) + [
            "inart_ub", "inart/atp", "inart/ub", "binding"]
        print("\nRates (topology units); inart_ub: count LP bound for inart's split\n"
              + format_table(rows, cols))
        bcols = ["topology", "preset", "seed"] + (["paper_lp"] if args.paper else []) + [
            "count_bound_first", "packed_first", "inart_rate", "inart_ub", "count_lps"]
        print("\nBreakdown: paper_lp = LP-InArt at L-InArt's split; count_bound_first / "
              "packed_first = count LP bound and packing there; inart after the split "
              "search\n" + format_table(rows, bcols))
        tcols = ["topology", "preset", "seed", "inart_e2e_s", "inart_e2e_cpu_s"] + [
            f"{s}_s" for s in dict.fromkeys(["inart", "atp", *schemes])]
        print("\nSolve times (s, wall clock; inart_e2e_cpu_s: CPU time of this process)\n"
              + format_table(rows, tcols))
        for r in rows:
            for reason in r.get("skipped", []):
                print(f"{r['topology']} {r['preset']} seed {r['seed']}: {reason}")
        figures += fattree_figures(rows)
    if args.plan_scale:
        scale = []
        for k in (int(x) for x in args.plan_scale.split(",") if x):
            for scheme in (x for x in args.plan_schemes.split(",") if x):
                print(f"inart plan -t fattree:{k} -s {scheme} ...", file=sys.stderr, flush=True)
                scale.append(plan_scale(k, scheme, args.plan_timeout))
        result["plan_scale"] = scale
        print("\ninart plan at scale (one fresh process per scheme; peak_gb: its peak "
              "resident memory)\n" + format_table(scale))
        figures += scale_figures(scale)
    if args.lp_timing:
        timing = [lp_timing(k, p, args.ps, args.seeds[0])
                  for k in sizes if k <= 6 for p in presets]
        result["lp_timing"] = timing
        print("\nLP formulations\n" + format_table(timing))
    if args.random:
        shapes = [x for x in args.shapes.split(",") if x]
        bad = [x for x in shapes if x not in SHAPES]
        if bad:
            print(f"inart bench solver: --shapes: unknown {bad}; expected {', '.join(SHAPES)}",
                  file=sys.stderr)
            return 2
        jobs = [(seed, shape) for shape in shapes
                for seed in range(args.random_seed, args.random_seed + args.random)]
        with ProcessPoolExecutor(max(args.jobs, 1)) as pool:
            futures = pool.map(bench_random, [j[0] for j in jobs],
                               [args.milp_time] * len(jobs), [j[1] for j in jobs])
            rand = list(progress_bar(futures, total=len(jobs), desc="random instances",
                             file=sys.stderr))
        summaries = {shape: random_summary([r for r in rand if r["shape"] == shape])
                     for shape in shapes}
        result["random"] = {"rows": rand, "summary": summaries}
        cols = ["shape", "seed", "instance", "workers", "atp", "paper", "r-inart", "inart",
                "milp", "proven", "inart/milp", "free_ub", "inart/free_ub", "milp/free_ub",
                "polished", "count_ub", "lp_ub", "binding", "inart_paths", "milp_paths",
                "inart_s", "milp_s"]
        print("\nRandom instances vs exact MILP (count_ub: count LP bound for inart's split; "
              "lp_ub: LP-InArt with a free split over the MILP's paths; free_ub: a bound on "
              "every plan of every split (split_bound.py), so inart/free_ub <= "
              "inart/optimum; polished: inart's plan is the MILP polish's; *_paths: simple = "
              "every simple path, every switch a candidate; min-hop = minimum-hop paths)\n"
              + format_table(rand, cols))
        for shape, summary in summaries.items():
            print(f"random {shape}: {json.dumps(summary)}")
            if summary["with_milp"]:
                figures.append(random_figure(summary, shape))
    if figures:
        result["figures"] = figures
        print("\nFigures (name, value, unit, ratio to the goal, goal)")
        print("\n".join(line(f) for f in figures))
    if args.json:
        write_json(args.json, result)
    return 0
