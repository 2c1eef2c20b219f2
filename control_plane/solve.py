"""`solve(topology, scheme=...) -> Plan`: the Python API every CLI command is a thin layer over.

Schemes (names used on the CLI and in plan JSON):
- ``inart``: L-InArt split (l_inart.py) -> LP-InArt with that split -> rounding -> split
  refined for the rounded routing -> LP-InArt re-solved for the refined split with fan-in cuts
  at the rate reached, rounded again; the better plan is kept.  ``upper_bound`` is the second
  LP's optimum, which bounds every plan with the final split.
- ``r-inart``: equal split -> the same two LP rounds, split kept equal (the paper's R-InArt).
Rounding (``rounding="best"``, default) keeps the better of Alg. 2's randomized rounding
(best of `trials` draws) and our capacity-aware rounding (fit_rounding.py);
``rounding="paper"`` uses Alg. 2's draws only, to reproduce the paper's algorithm alone.
- ``joint``: our addition, a local search over split and routing that starts from ``inart``'s
  plan, so it is never below ``inart`` (same seed, trials and paths).  Each round re-solves
  two LPs with fan-in cuts at the best plan's rate and split: the joint LP, which may move the
  split, and the fixed-split LP of ``inart``; both are rounded (with fresh seeds), their splits
  refined for the rounded routing, and the better plan is kept if it beats the best so far;
  the search stops at the first round without a gain.  ``meta["joint"]["kept"]`` says whether
  the result is ``inart``'s plan unchanged or improved by the rounds.  ``upper_bound`` is the
  joint LP's optimum without cuts: any integral plan over the LP's candidate switches and
  paths (as every rounded plan is), with any split, is a feasible point of it.  The cut joint
  LP is no bound (its cuts assume the reference split, which a plan may leave): it only
  steers rounding.
- ``atp``, ``lbmm``: the paper's baselines (baselines.py).
- ``milp``: the exact problem for small instances (milp.py), free split.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from control_plane.baselines import atp, equal_split, lbmm
from control_plane.fit_rounding import fit_best
from control_plane.l_inart import l_inart
from control_plane.lp_inart import InArtLP, LPResult
from control_plane.milp import solve_milp
from control_plane.paths import PathSets
from control_plane.plan import Plan
from control_plane.resplit import best_split
from control_plane.rounding import round_best
from control_plane.topology import Topology

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
CUT_ROUNDS = 3  # LP re-solves with fan-in cuts at the best rate so far
JOINT_ROUNDS = 4  # joint's search rounds (it stopped within 3 on fig1, fat-trees, leaf-spines)


def _resplit(plan: Plan) -> Plan:
    """The same decisions with the split that maximises their rate (never lower)."""
    better = replace(plan, partition=best_split(plan), meta=dict(plan.meta))
    better.rate = better.evaluate().rate
    return better if better.rate >= plan.rate else plan


def _round(topo: Topology, paths: PathSets, lp: LPResult, split: dict[str, float], seed: int,
           trials: int, scheme: str, rounding: str) -> Plan:
    """R-InArt's rounding step: Alg. 2's random trials, plus capacity-aware rounding."""
    plan = round_best(topo, paths, lp, split, trials, seed, scheme)
    plan.meta["rounding"] = "random"
    if rounding == "best":
        fitted = fit_best(topo, paths, lp, split, scheme, floor=0.0)
        if fitted is not None and fitted.rate > plan.rate:
            plan = fitted
            plan.meta["rounding"] = "capacity-aware"
    return plan


def _refine(topo: Topology, paths: PathSets, split: dict[str, float], seed: int, trials: int,
            opts: Options, scheme: str, resplit: bool = True) -> Plan:
    """R-InArt from `split`, then again with fan-in cuts at the rate reached (and, with
    `resplit`, from the split refined for the rounded routing).  The second LP's optimum
    bounds every plan with the final split, so it is reported as `upper_bound`."""
    lp = InArtLP(topo, paths, formulation=opts.formulation)
    first = lp.solve(split)
    plan = _round(topo, paths, first, split, seed, trials, scheme, opts.rounding)
    if resplit:
        plan = _resplit(plan)
    for i in range(CUT_ROUNDS):
        cut = lp.solve(plan.partition, at_least=plan.rate)
        bound = cut.rate
        again = _round(topo, paths, cut, plan.partition, seed + 1 + i, trials, scheme,
                       opts.rounding)
        if again.rate <= plan.rate * (1 + 1e-6):
            break
        plan = again
    plan.upper_bound = bound
    plan.meta.update({"lp_first_rate": first.rate, "lp_size": first.size})
    return plan


def _inart(topo: Topology, paths: PathSets, seed: int, trials: int, opts: Options) -> Plan:
    phase1 = l_inart(topo)
    log.debug(phase1.describe())
    plan = _refine(topo, paths, phase1.split, seed, trials, opts, "inart")
    plan.meta["l_inart"] = {"split": phase1.split, "eq2_rate": phase1.rate,
                            "lambda": phase1.lam, "alpha": phase1.alpha,
                            "theta": phase1.theta, "rho": phase1.rho}
    return plan


def _r_inart(topo: Topology, paths: PathSets, seed: int, trials: int, opts: Options) -> Plan:
    return _refine(topo, paths, equal_split(topo), seed, trials, opts, "r-inart", resplit=False)


def _joint(topo: Topology, paths: PathSets, seed: int, trials: int, opts: Options) -> Plan:
    """`inart`'s plan, improved while a cut joint or fixed-split LP rounds to a better one."""
    start = _inart(topo, paths, seed, trials, opts)
    joint = InArtLP(topo, paths, joint=True, formulation=opts.formulation)
    fixed = InArtLP(topo, paths, formulation=opts.formulation)
    bound = joint.solve()
    best, steps = start, []
    for i in range(JOINT_ROUNDS):
        tries = []
        for k, (name, lp) in enumerate((("joint-lp", joint), ("fixed-split-lp", fixed))):
            cut = lp.solve(best.partition, at_least=best.rate)
            fresh = seed + CUT_ROUNDS + 1 + 2 * i + k  # seeds inart's rounds did not draw
            rounded = _round(topo, paths, cut, cut.split, fresh, trials, "joint", opts.rounding)
            tries.append((_resplit(rounded), name))
        plan, name = max(tries, key=lambda t: t[0].rate)
        if plan.rate <= best.rate * (1 + 1e-6):
            break
        best = plan
        steps.append(name)
    best.upper_bound = bound.rate  # no cuts: bounds every plan over every split
    best.meta.update({"joint": {"kept": "inart" if best is start else "improved",
                                "inart_rate": start.rate, "steps": steps,
                                "lp_split": bound.split}})
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

    >>> from control_plane.topologies import fig1
    >>> round(solve(fig1(), "inart").rate, 3)
    2.5
    """
    if scheme not in SOLVERS:
        raise ValueError(f"scheme '{scheme}': expected one of {SCHEMES}")
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding '{rounding}': expected one of {ROUNDINGS}")
    paths = paths or PathSets(topology, k_paths)
    t0 = time.perf_counter()
    plan = SOLVERS[scheme](topology, paths, seed, trials, Options(formulation, rounding))
    plan.finalize()
    plan.scheme = scheme
    plan.meta["solve_seconds"] = round(time.perf_counter() - t0, 4)
    plan.meta["seed"] = seed
    plan.meta["binding"] = plan.evaluate().binding
    return plan
