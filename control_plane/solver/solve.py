"""`solve(topology, scheme=...) -> Plan`: the Python API every CLI command is a thin layer over.

Schemes (names used on the CLI and in plan JSON):
- ``inart``: L-InArt split (l_inart.py), then R-InArt's LP and rounding.  With
  ``rounding="best"`` (default) the LP is the count LP (count_lp.py: LP-InArt per worker
  class with the integer caps of a target rate) and the rounding is the packing it guides
  (pack.py), tried at the LP's bound first and then below; then a search over splits
  (`_count_inart`: refine the split for the rounded routing, raise one PS's share, and on
  small two-PS instances the splits of a grid with the best bounds).  ``upper_bound`` is the
  count LP's bound for the plan's final split: no plan with that split reaches a higher
  rate.  Instances above LP_MAX_FLOWS pairs are packed without the LP (`_large`).
- ``r-inart``: the same with the equal split kept (the paper's R-InArt).
- ``rounding="paper"``: Alg. 2 as the paper states it, for fidelity: LP-InArt in rate
  variables (lp_inart.py) and the best of `trials` randomized roundings (rounding.py), split
  refined and LP re-solved with fan-in cuts at the rate reached; ``upper_bound`` is then the
  cut LP's optimum, which bounds every plan with the final split.
- ``joint``: our addition: ``inart``'s plan, the equal split's and the joint LP's split
  (LP-InArt with x_s free), each rounded as above; the best plan is kept, so never below
  ``inart``.  ``upper_bound`` is the joint LP's optimum, which bounds every plan over the
  LP's candidate switches and paths with any split (a weaker bound than the count LP's, which
  holds for one split only).
- ``atp``, ``lbmm``: the paper's baselines (baselines.py).
- ``milp``: the exact problem for small instances (milp.py), free split.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from control_plane.model.plan import MAX_FAN_IN, Plan
from control_plane.model.topology import Topology
from control_plane.solver.baselines import atp, equal_split, lbmm
from control_plane.solver.count_lp import CountLP
from control_plane.solver.l_inart import l_inart
from control_plane.solver.lp_inart import InArtLP
from control_plane.solver.milp import solve_milp
from control_plane.solver.pack import best_pack, pack_search
from control_plane.solver.paths import PathSets, exact_paths, simple_paths_at_most
from control_plane.solver.resplit import refined
from control_plane.solver.rounding import round_best

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    """Solver knobs shared by the LP-based schemes."""

    formulation: str = "compact"
    rounding: str = "best"  # "paper": Alg. 2's random rounding only

SCHEMES = ("inart", "r-inart", "joint", "atp", "lbmm", "milp")
ROUNDINGS = ("best", "paper")
PAPER_SCHEMES = ("inart", "r-inart", "atp", "lbmm")
MILP_MAX_FLOWS = 64
CUT_ROUNDS = 3  # paper rounding: LP re-solves with fan-in cuts at the best rate so far
ROUNDS = 2  # splits packed for per split search (count rounding)
SMALL_ROUNDS = 12  # the same on instances small enough for the exact MILP
SHIFTS = (0.2, 0.1)  # split search: a PS's share is raised by these when refining stalls
GRID, GRID_PACKED = 0.02, 6  # small two-PS instances: split grid, and how many are packed
POLISH_GAP = 0.01  # small instances: a plan this far under the best split bound seen is polished
POLISH_NODES, POLISH_SECONDS = 200, 10.0  # that polish (the exact MILP from the plan): limits
PACK_GAP = 0.01  # a carried plan this close to its split's bound is not packed for again
LP_MAX_FLOWS = 1500  # larger instances are packed without the count LP (fattree:16: 4080)
DETOUR_PATHS = 64  # small instances with at most this many simple paths per pair plan over all
MIN_HOP_SCHEMES = ("atp", "lbmm")  # the baselines route as their papers do: shortest paths
SHORTEST_TOO = ("inart", "r-inart", "joint")  # also planned over minimum-hop paths (_or_shortest)


def default_paths(topo: Topology, scheme: str = "inart", k: int = 3) -> PathSets:
    """The path sets a scheme plans over unless it is given some.  On small instances (at
    most MILP_MAX_FLOWS worker-PS pairs) whose switch graph has few simple paths (at most
    DETOUR_PATHS per pair: the small irregular graphs, not fat-trees), InArt's schemes take
    every simple path with every switch a candidate (`exact_paths`, installable segments
    only: model/unaggregated.py): going around a cycle
    to avoid a bottleneck link, or to aggregate at a switch off every shortest path, gains
    up to a quarter of the rate on them.  Elsewhere, and for the baselines, up to k
    minimum-hop paths: on fat-trees and leaf-spines those are what ECMP uses and they keep
    large LPs small."""
    if (scheme not in MIN_HOP_SCHEMES and len(topo.workers) * len(topo.pss) <= MILP_MAX_FLOWS
            and simple_paths_at_most(topo, DETOUR_PATHS)):
        return exact_paths(topo)
    return PathSets(topo, k)


def _count_round(lp: CountLP, split: dict[str, float], scheme: str, carried: Plan | None,
                 hi: float, floor: float | None, small: bool) -> tuple[Plan | None, float,
                                                                       dict]:
    """Count LP and packing for one split: (best packed plan or None, the split's bound,
    what it took).  `carried`: a plan with this split already known (its bound is then
    searched upward from its rate); `hi`: a rate no plan reaches; `floor`: the best rate
    found so far (None: bound only; large instances do not pack below it).  A split is
    packed for only when the floor is more than PACK_GAP below its bound; `small` instances
    get the full packing effort at every target (`best_pack`'s `thorough`)."""
    lp.use_split(split)
    start = carried.rate if carried else floor or 0.0
    bound = lp.bound_from(start, hi) if start > 0 else lp.bound(0.0, hi)
    plan = None
    tried = floor is not None and floor < bound.rate * (1 - PACK_GAP)
    if tried:
        top = bound.solution.rate if bound.solution else bound.rate  # the LP is feasible there
        # a packing's true rate is often above its target: small instances try below floor
        plan = best_pack(lp, top / 2 if small else max(floor, top / 2), top, scheme,
                         thorough=small)
    info = {"bound": bound.rate, "tried": tried, "packed": plan.rate if plan else None,
            "lp_solves": len(lp.solved)}
    return plan, bound.rate, info


def _count_inart(topo: Topology, paths: PathSets, split: dict[str, float], scheme: str,
                 resplit: bool, eq2: float) -> Plan:
    """R-InArt with the count LP, and (with `resplit`) a local search over splits: round a
    split, refine the split for the rounded routing (resplit.py) and round again for the
    refined split while that gains; when it stops gaining, try the best split with one PS's
    share raised by each of SHIFTS (a symmetric split is a fixed point of refining: fig1's
    equal split rounds to 2.4, its optimum 2.5 is found at 7/15 : 8/15).  At most `ROUNDS`
    splits are packed for (`SMALL_ROUNDS` on instances with at most MILP_MAX_FLOWS pairs);
    a refined plan found by the last one is kept, with its split's bound.  Larger instances
    stop at a new best plan within PACK_GAP of its split's bound.  `eq2`: Eq. 2's optimum,
    which no plan exceeds.  The plan's `upper_bound` is the count LP's bound for its own
    split."""
    flows = len(topo.workers) * len(topo.pss)
    if flows > LP_MAX_FLOWS:
        return _large(topo, paths, split, scheme, resplit, eq2)
    small = flows <= MILP_MAX_FLOWS
    budget = SMALL_ROUNDS if small else ROUNDS
    lp = CountLP(topo, paths, class_rows=small)
    best: Plan | None = None
    tried: set[tuple[float, ...]] = set()
    todo: list[tuple[dict[str, float], Plan | None]] = [(split, None)]
    grid_bound = 0.0  # the best count LP bound among the grid's splits
    if small and resplit and len(topo.pss) == 2:
        grid_bound, promising = _promising_splits(lp, topo.pss, eq2)
        todo += [(x, None) for x in promising]
    steps: list[dict] = []
    while todo:
        x, carried = todo.pop(0)
        key = tuple(round(x[s], 6) for s in topo.pss)
        if key in tried:
            continue
        tried.add(key)
        over = sum(step["tried"] for step in steps) >= budget
        if over and carried is None:
            break
        floor = max(best.rate if best else 0.0, carried.rate if carried else 0.0)
        plan, bound, info = _count_round(lp, x, scheme, carried, eq2, None if over else floor,
                                         small)
        steps.append(info)
        found = max((p for p in (plan, carried) if p is not None), key=lambda p: p.rate,
                    default=None)
        if found is None:
            continue
        found.upper_bound = bound
        if best is None or found.rate > best.rate * (1 + 1e-6):
            best = found
        if not resplit or over or (not small and found is best
                                   and best.rate >= bound * (1 - PACK_GAP)):
            break  # no split search, the budget spent, or (large) a new best at its bound
        better = refined(found)
        if better.rate > best.rate * (1 + 1e-6):
            todo.insert(0, (better.partition, better))
        elif not todo:
            todo = [(_shift(best.partition, s, by), None) for by in SHIFTS for s in topo.pss]
    if best is None:  # no packing fitted (not seen so far): Alg. 2's draws never fail
        return _paper(topo, paths, split, 0, 32, scheme, resplit)
    best.meta["rounding"] = "count-lp"
    if small and resplit:
        best = _polished(lp, best, paths, max(best.upper_bound or 0.0, grid_bound), eq2)
    best.meta["count_lp"] = {"size": lp.size, "build_ms": int(lp.build_seconds * 1000),
                             "steps": steps}
    return best


def _large(topo: Topology, paths: PathSets, split: dict[str, float], scheme: str,
           resplit: bool, eq2: float) -> Plan:
    """Instances too large for the count LP (fattree:16's takes minutes per solve): the
    packing alone, by bisection on the rate, then the split refined once.  `upper_bound` is
    Eq. 2's optimum, the least worker uplink or the fan-in bound, whichever is lowest: each
    bounds every plan."""
    bound = min(eq2, _least_uplink(paths), _fan_in_bound(topo))
    plan = pack_search(topo, paths, split, bound, scheme)
    if plan is None:
        return _paper(topo, paths, split, 0, 32, scheme, resplit)
    if resplit:
        plan = refined(plan)
    plan.upper_bound = bound
    plan.meta["rounding"] = "packing (no LP: instance too large)"
    return plan


def _least_uplink(paths: PathSets) -> float:
    """The least spare uplink of a single-homed worker: that link carries the worker's whole
    rate f in every plan, so no plan exceeds it."""
    return min((c.uplink for c in paths.classes if c.single), default=math.inf)


def _fan_in_bound(topo: Topology) -> float:
    """A PS s with a share x_s > 0 receives every worker's gradient through streams or
    direct flows of g_s = x_s f each; a stream takes at most MAX_FAN_IN workers (the
    bitmap) and at most floor(C / g_s) (C: the largest spare switch capacity), a direct
    flow one.  So g_s ceil(W / fan(g_s)) <= B(s), with fan(g) = max(1, min(MAX_FAN_IN,
    floor(C / g))); the left side grows with g_s, so each PS has a largest g_s*, and
    f = sum_s g_s <= sum_s g_s* for every plan of every split (fattree:16: 1.64 where
    Eq. 2 says 2.90; fattree:32: 0.59 where it says 1.42).  g_s* is found exactly over
    the intervals where fan(g) is constant."""
    W = len(topo.workers)
    C = max((max(topo.nodes[v].spare, 0.0) for v in topo.switches), default=0.0)
    total = 0.0
    for s in topo.pss:
        B = max(topo.nodes[s].spare, 0.0)
        if C <= 0:
            total += B / W
            continue
        best = 0.0
        for m in range(1, MAX_FAN_IN + 1):  # fan(g) = m on (lo, hi]
            lo = 0.0 if m == MAX_FAN_IN else C / (m + 1)
            hi = math.inf if m == 1 else C / m
            top = min(hi, B / math.ceil(W / m))
            if top > lo:
                best = max(best, top)
        total += best
    return total * (1 + 1e-9)


def any_plan_bound(topo: Topology, paths: PathSets | None = None) -> float:
    """A rate no plan of any scheme and split exceeds: Eq. 2's optimum (it relaxes every
    plan), the least single worker uplink or the fan-in bound, whichever is lowest.
    `inart plan` states the baselines' rates against it (they report no bound of their
    own)."""
    return min(l_inart(topo).rate, _least_uplink(paths or PathSets(topo)),
               _fan_in_bound(topo))


def _promising_splits(lp: CountLP, pss: list[str], eq2: float
                      ) -> tuple[float, list[dict[str, float]]]:
    """Two PSs: the best count LP bound over a grid of splits (step GRID) and the
    GRID_PACKED splits with the highest bounds, best first.  On a small instance a bound
    costs a few tiny LP solves; packing is what costs, so only the most promising splits
    are packed.  The best integral plans sit at splits where integer counts balance
    (fractions such as 3/7), so a coarse grid misses them: a step of 0.05 left plans 4%
    under the exact optimum, which the split refinement then could not recover."""
    scored = []
    for i in range(1, round(1 / GRID)):
        x = {pss[0]: i * GRID, pss[1]: 1 - i * GRID}
        lp.use_split(x)
        scored.append((lp.bound(0.0, eq2).rate, i, x))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return scored[0][0], [x for _, _, x in scored[:GRID_PACKED]]


def _polished(lp: CountLP, plan: Plan, paths: PathSets, reference: float, eq2: float) -> Plan:
    """Small instances (at most MILP_MAX_FLOWS pairs): when `plan` is more than POLISH_GAP
    under `reference` (the best count LP bound seen for any split tried), the exact MILP
    over the same path sets, free split, warm-started from `plan`, runs for at most
    POLISH_NODES branch-and-bound nodes (deterministic) and POLISH_SECONDS; its plan is
    kept if it is better, with the count LP bound for its own split.  The packing
    occasionally misses a plan that a split's bound says exists (4% under it on one
    irregular graph); from a good incumbent the MILP usually closes that gap in seconds."""
    if plan.rate >= reference * (1 - POLISH_GAP):
        return plan
    t0 = time.perf_counter()
    exact = solve_milp(plan.topology, paths, time_limit=POLISH_SECONDS, scheme=plan.scheme,
                       start=plan, max_nodes=POLISH_NODES)
    polish = {"seconds": round(time.perf_counter() - t0, 3), "from": plan.rate,
              "proven": bool(exact.meta["milp_optimal"])}
    if exact.rate <= plan.rate * (1 + 1e-6):
        plan.meta["milp_polish"] = polish | {"kept": False}
        return plan
    lp.use_split(exact.partition)
    exact.upper_bound = lp.bound_from(exact.rate, eq2).rate
    exact.meta = plan.meta | {"stream_paths": exact.meta["stream_paths"],
                              "milp_polish": polish | {"kept": True}}
    return exact


def _shift(split: dict[str, float], s: str, by: float) -> dict[str, float]:
    """`split` with PS s's share raised by the factor 1 + by, renormalised."""
    raised = {t: x * (1 + by) if t == s else x for t, x in split.items()}
    total = sum(raised.values())
    return {t: x / total for t, x in raised.items()}


def _paper(topo: Topology, paths: PathSets, split: dict[str, float], seed: int, trials: int,
           scheme: str, resplit: bool, formulation: str = "compact") -> Plan:
    """R-InArt as the paper states it: LP-InArt, Alg. 2's draws (best of `trials`), then
    (with `resplit`, from the split refined for the rounded routing) LP-InArt again with
    fan-in cuts at the rate reached.  The last LP's optimum bounds every plan with the final
    split, so it is reported as `upper_bound`."""
    lp = InArtLP(topo, paths, formulation=formulation)
    first = lp.solve(split)
    plan = round_best(topo, paths, first, split, trials, seed, scheme)
    if resplit:
        plan = refined(plan)
    for i in range(CUT_ROUNDS):
        cut = lp.solve(plan.partition, at_least=plan.rate)
        bound = cut.rate
        again = round_best(topo, paths, cut, plan.partition, trials, seed + 1 + i, scheme)
        if again.rate <= plan.rate * (1 + 1e-6):
            break
        plan = again
    plan.upper_bound = bound
    plan.meta.update({"rounding": "random", "lp_first_rate": first.rate,
                      "lp_size": first.size})
    return plan


def _inart(topo: Topology, paths: PathSets, seed: int, trials: int, opts: Options) -> Plan:
    phase1 = l_inart(topo)
    log.debug(phase1.describe())
    if opts.rounding == "paper":
        plan = _paper(topo, paths, phase1.split, seed, trials, "inart", True, opts.formulation)
    else:
        plan = _count_inart(topo, paths, phase1.split, "inart", True, phase1.rate)
    plan.meta["l_inart"] = {"split": phase1.split, "eq2_rate": phase1.rate,
                            "lambda": phase1.lam, "alpha": phase1.alpha,
                            "theta": phase1.theta, "rho": phase1.rho}
    return plan


def _fixed(topo: Topology, paths: PathSets, split: dict[str, float], seed: int, trials: int,
           opts: Options, scheme: str) -> Plan:
    """R-InArt with `split` kept: phase 2 alone."""
    if opts.rounding == "paper":
        return _paper(topo, paths, split, seed, trials, scheme, False, opts.formulation)
    return _count_inart(topo, paths, split, scheme, False, l_inart(topo).rate)


def _r_inart(topo: Topology, paths: PathSets, seed: int, trials: int, opts: Options) -> Plan:
    return _fixed(topo, paths, equal_split(topo), seed, trials, opts, "r-inart")


def _joint(topo: Topology, paths: PathSets, seed: int, trials: int, opts: Options) -> Plan:
    """The best of `inart`'s plan and the rounded equal and joint-LP splits."""
    start = _inart(topo, paths, seed, trials, opts)
    joint_lp = InArtLP(topo, paths, joint=True, formulation=opts.formulation).solve()
    eq2 = start.meta["l_inart"]["eq2_rate"]
    best, kept = start, "inart"
    for name, split in (("equal", equal_split(topo)), ("joint-lp", joint_lp.split)):
        if opts.rounding == "paper":
            plan = _paper(topo, paths, split, seed, trials, "joint", True, opts.formulation)
        else:
            plan = _count_inart(topo, paths, split, "joint", True, eq2)
        if plan.rate > best.rate * (1 + 1e-6):
            best, kept = plan, name
    best.upper_bound = joint_lp.rate  # bounds every plan over every split
    best.meta["joint"] = {"kept": kept, "inart_rate": start.rate, "lp_split": joint_lp.split}
    return best


def _milp(topo: Topology, paths: PathSets, seed: int, trials: int, opts: Options) -> Plan:
    flows = len(topo.workers) * len(topo.pss)
    if flows > MILP_MAX_FLOWS:
        raise ValueError(f"scheme 'milp': {flows} worker-PS flows; the exact MILP is for small "
                         f"instances (at most {MILP_MAX_FLOWS})")
    plan = solve_milp(topo, paths)
    objective = plan.meta.pop("milp_objective")
    # a MILP stopped by its time limit proves no bound: report none rather than a wrong one
    plan.upper_bound = objective if plan.meta["milp_optimal"] else None
    return plan


SOLVERS: dict[str, Callable[[Topology, PathSets, int, int, Options], Plan]] = {
    "inart": _inart,
    "r-inart": _r_inart,
    "joint": _joint,
    "atp": lambda t, p, *_: atp(t, p),
    "lbmm": lambda t, p, *_: lbmm(t, p),
    "milp": _milp,
}


def solve(topology: Topology, scheme: str = "inart", seed: int = 0, k_paths: int = 3,
          trials: int = 32, formulation: str = "compact", rounding: str = "best",
          paths: PathSets | None = None) -> Plan:
    """Plan one scheme on a topology; the returned plan is validated and its rate recomputed.

    >>> from control_plane.model.topologies import fig1
    >>> round(solve(fig1(), "inart").rate, 3)
    2.5
    """
    if scheme not in SOLVERS:
        raise ValueError(f"scheme '{scheme}': expected one of {SCHEMES}")
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding '{rounding}': expected one of {ROUNDINGS}")
    given, paths = paths is not None, paths or default_paths(topology, scheme, k_paths)
    t0 = time.perf_counter()
    opts = Options(formulation, rounding)
    plan = SOLVERS[scheme](topology, paths, seed, trials, opts)
    if not given and scheme in SHORTEST_TOO and rounding == "best":
        plan = _or_shortest(plan, paths, k_paths,
                            lambda p: SOLVERS[scheme](topology, p, seed, trials, opts))
    return _finished(plan, scheme, seed, t0)


def route(topology: Topology, split: dict[str, float], scheme: str = "inart", seed: int = 0,
          k_paths: int = 3, trials: int = 32, rounding: str = "best",
          paths: PathSets | None = None) -> Plan:
    """Phase 2 alone: aggregation points and paths for a given split, as ``r-inart`` does for
    the equal one.  The service re-plans with it on network events: keeping a job's split
    keeps the shards its PSs hold.  ``upper_bound`` holds for plans with this split."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding '{rounding}': expected one of {ROUNDINGS}")
    if set(split) != set(topology.pss):
        raise ValueError(f"split: keys {sorted(split)} must be the topology's PSs "
                         f"{topology.pss}")
    if any(not 0 <= x <= 1 for x in split.values()) or abs(sum(split.values()) - 1) > 1e-6:
        raise ValueError(f"split: shares {split} must lie in [0, 1] and sum to 1")
    given, paths = paths is not None, paths or default_paths(topology, scheme, k_paths)
    t0 = time.perf_counter()
    opts = Options(rounding=rounding)
    plan = _fixed(topology, paths, split, seed, trials, opts, scheme)
    if not given and rounding == "best":
        plan = _or_shortest(plan, paths, k_paths,
                            lambda p: _fixed(topology, p, split, seed, trials, opts, scheme))
    return _finished(plan, scheme, seed, t0)


def _or_shortest(plan: Plan, paths: PathSets, k: int,
                 again: Callable[[PathSets], Plan]) -> Plan:
    """Over every simple path (`default_paths`) the packing now and then misses a plan that
    minimum-hop paths alone give (a leaf-spine: 8.44 where minimum-hop paths give 8.5), so
    the scheme plans over those too (`again`) and the better plan is kept.  A minimum-hop
    plan is one over every simple path, but its bound is not: it is recomputed over `paths`
    (joint: the free-split LP's over `paths`, which bounds every plan)."""
    if paths.routes != "simple":
        return plan
    short = again(PathSets(plan.topology, k))
    if short.rate <= plan.rate * (1 + 1e-6):
        return plan
    if "joint" in short.meta:
        short.upper_bound = plan.upper_bound
    else:
        lp = CountLP(plan.topology, paths)
        lp.use_split(short.partition)
        short.upper_bound = lp.bound_from(short.rate, l_inart(plan.topology).rate).rate
    short.meta["paths"] = "minimum-hop plan kept (better than over every simple path)"
    return short


def _finished(plan: Plan, scheme: str, seed: int, t0: float) -> Plan:
    """Validate the plan (its rate recomputed) and record how it was made."""
    plan.finalize()
    plan.scheme = scheme
    plan.meta["solve_seconds"] = round(time.perf_counter() - t0, 4)
    plan.meta["seed"] = seed
    plan.meta["binding"] = plan.evaluate().binding
    return plan


def plan_for(topology: Topology, scheme: str, seed: int) -> Plan:
    """``solve``, refusing a plan without a positive finite rate (nothing to run)."""
    plan = solve(topology, scheme, seed)
    if not plan.rate > 0 or not math.isfinite(plan.rate):
        raise ValueError(f"scheme '{scheme}' found no positive rate on {topology.name}")
    return plan
