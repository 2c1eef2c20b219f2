"""`solve(topology, scheme=...) -> Plan`: the Python API every CLI command is a thin layer over.

Schemes (names used on the CLI and in plan JSON):
- ``inart``: L-InArt split (l_inart.py) -> LP-InArt with that split -> randomized rounding
  (best of `trials`) -> split refined for the rounded routing -> LP-InArt re-solved warm for
  the refined split and rounded again; the better plan is kept.  ``upper_bound`` is the LP
  optimum for the final split, so it bounds every plan with that split.
- ``r-inart``: equal split -> LP-InArt -> rounding (the paper's R-InArt baseline).
- ``joint``: our addition: the LP chooses split and routing together; then the same
  rounding and refinement as ``inart`` from that split.  ``upper_bound`` is the joint LP's
  optimum, a bound over every split.
- ``atp``, ``lbmm``: the paper's baselines (baselines.py).
- ``milp``: the exact problem for small instances (milp.py), free split.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from control_plane.baselines import atp, equal_split, lbmm
from control_plane.l_inart import l_inart
from control_plane.lp_inart import InArtLP
from control_plane.milp import solve_milp
from control_plane.paths import PathSets
from control_plane.plan import Plan
from control_plane.resplit import best_split
from control_plane.rounding import round_best
from control_plane.topology import Topology

log = logging.getLogger(__name__)

SCHEMES = ("inart", "r-inart", "joint", "atp", "lbmm", "milp")
PAPER_SCHEMES = ("inart", "r-inart", "atp", "lbmm")
MILP_MAX_FLOWS = 64


def _resplit(plan: Plan) -> Plan:
    """The same decisions with the split that maximises their rate (never lower)."""
    better = replace(plan, partition=best_split(plan), meta=dict(plan.meta))
    better.rate = better.evaluate().rate
    return better if better.rate >= plan.rate else plan


def _refine(topo: Topology, paths: PathSets, split: dict[str, float], seed: int, trials: int,
            formulation: str, scheme: str) -> Plan:
    """R-InArt from `split`, then once more from the split refined for the rounded routing."""
    lp = InArtLP(topo, paths, formulation=formulation)
    first = lp.solve(split)
    plan = _resplit(round_best(topo, paths, first, split, trials, seed, scheme))
    refined = lp.solve(plan.partition)  # warm start: only the split coefficients changed
    again = round_best(topo, paths, refined, plan.partition, trials, seed + 1, scheme)
    best = again if again.rate > plan.rate else plan
    best.upper_bound = refined.rate
    best.meta.update({"lp_first_rate": first.rate, "lp_size": first.size})
    return best


def _inart(topo: Topology, paths: PathSets, seed: int, trials: int, formulation: str) -> Plan:
    phase1 = l_inart(topo)
    log.debug(phase1.describe())
    plan = _refine(topo, paths, phase1.split, seed, trials, formulation, "inart")
    plan.meta["l_inart"] = {"split": phase1.split, "eq2_rate": phase1.rate,
                            "lambda": phase1.lam, "alpha": phase1.alpha,
                            "theta": phase1.theta, "rho": phase1.rho}
    return plan


def _r_inart(topo: Topology, paths: PathSets, seed: int, trials: int, formulation: str) -> Plan:
    split = equal_split(topo)
    lp = InArtLP(topo, paths, formulation=formulation).solve(split)
    plan = round_best(topo, paths, lp, split, trials, seed, "r-inart")
    plan.upper_bound = lp.rate
    plan.meta["lp_size"] = lp.size
    return plan


def _joint(topo: Topology, paths: PathSets, seed: int, trials: int, formulation: str) -> Plan:
    joint = InArtLP(topo, paths, joint=True, formulation=formulation).solve()
    plan = _refine(topo, paths, joint.split, seed, trials, formulation, "joint")
    plan.upper_bound = joint.rate  # the joint LP bounds every split
    plan.meta["joint_split"] = joint.split
    return plan


def _milp(topo: Topology, paths: PathSets, seed: int, trials: int, formulation: str) -> Plan:
    flows = len(topo.workers) * len(topo.pss)
    if flows > MILP_MAX_FLOWS:
        raise ValueError(f"scheme 'milp': {flows} worker-PS flows; the exact MILP is for small "
                         f"instances (at most {MILP_MAX_FLOWS})")
    plan = solve_milp(topo, paths)
    plan.upper_bound = plan.meta.pop("milp_objective")
    return plan


SOLVERS: dict[str, Callable[[Topology, PathSets, int, int, str], Plan]] = {
    "inart": _inart,
    "r-inart": _r_inart,
    "joint": _joint,
    "atp": lambda t, p, *_: atp(t, p),
    "lbmm": lambda t, p, *_: lbmm(t, p),
    "milp": _milp,
}


def solve(topology: Topology, scheme: str = "inart", seed: int = 0, k_paths: int = 3,
          trials: int = 32, formulation: str = "compact",
          paths: PathSets | None = None) -> Plan:
    """Plan one scheme on a topology; the returned plan is validated and its rate recomputed.

    >>> from control_plane.topologies import fig1
    >>> round(solve(fig1(), "inart").rate, 3)
    2.5
    """
    if scheme not in SOLVERS:
        raise ValueError(f"scheme '{scheme}': expected one of {SCHEMES}")
    paths = paths or PathSets(topology, k_paths)
    t0 = time.perf_counter()
    plan = SOLVERS[scheme](topology, paths, seed, trials, formulation)
    plan.finalize()
    plan.scheme = scheme
    plan.meta["solve_seconds"] = round(time.perf_counter() - t0, 4)
    plan.meta["seed"] = seed
    plan.meta["binding"] = plan.evaluate().binding
    return plan
