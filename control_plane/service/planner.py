"""Re-planning a running job: InArt's two phases, the first only when the split must change.

The InArt paper runs phase 1 (L-InArt: the model split x_s) at long intervals and phase 2
(LP-InArt + rounding: aggregation points and paths) whenever the network changes.  L-InArt's
split depends only on the PSs' spare capacities (x_s is proportional to B(s) - b(s), see
control_plane/solver/l_inart.py), so a re-plan re-runs phase 1 exactly when that split moves: a PS
slowed down, or a PS was cut off or came back.  Otherwise it routes with the job's current
split fixed, which keeps the shards the PSs hold.

Phase 2 is ``solve.route``: the count LP and its packing for the split kept (R-InArt).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from control_plane.model.plan import Plan, keep_on
from control_plane.model.topology import Topology
from control_plane.solver.l_inart import l_inart
from control_plane.solver.solve import route, solve

SPLIT_TOLERANCE = 1e-9
PHASED_SCHEME = "inart"  # other schemes are re-solved whole on every change


@dataclass
class Planned:
    """A plan and how it was made."""

    plan: Plan
    phase: int  # 1: phase 1 and 2 ran; 2: phase 2 only (split kept)
    phase1_split: dict[str, float]  # L-InArt's split on this topology (decides the next phase)
    seconds: float


def _same_split(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(abs(a[k] - b[k]) <= SPLIT_TOLERANCE for k in a)


def plan_job(topo: Topology, scheme: str, seed: int, current: Plan | None = None,
             phase1_split: dict[str, float] | None = None,
             earlier: Sequence[Plan] = (), hold_split: bool = False) -> Planned:
    """Plan a job on ``topo``: both phases for a new job or when L-InArt's split moved since
    ``phase1_split`` (or the job's PSs changed); phase 2 with ``current``'s split otherwise.
    ``hold_split``: keep the split even when L-InArt's moved, as long as the PSs are the same
    (a running job's PSs hold their shards; hosts follow re-routing only, host_stack/ina/
    follow.py); the split phase 1 wants is then in ``plan.meta["split_held"]``.

    Phase 2 first looks for an ``earlier`` plan (or ``current``) made for exactly this
    network with this split: a failure that healed brings back the plan from before it, with
    no solving.  Otherwise it routes afresh and also considers the decisions of ``current``
    and the ``earlier`` plans with the same split: the best one that still fits wins, so a
    re-plan never moves to a worse plan than one it knows."""
    t0 = time.perf_counter()
    split = l_inart(topo).split if scheme == PHASED_SCHEME else {}
    moved = phase1_split is not None and not _same_split(split, phase1_split)
    if (scheme != PHASED_SCHEME or current is None or phase1_split is None
            or set(current.partition) != set(topo.pss) or (moved and not hold_split)):
        plan, phase = solve(topo, scheme, seed), 1
    else:
        same_split = [p for p in (current, *earlier)
                      if _same_split(p.partition, current.partition)]
        plan = _replayed(topo, same_split) or _rerouted(topo, scheme, seed, current, same_split)
        phase = 2
        if moved:  # only hold_split kept it: phase 1 would move it
            plan.meta["split_held"] = split
    plan.meta["phase"] = phase
    return Planned(plan, phase, split, time.perf_counter() - t0)


def _replayed(topo: Topology, known: list[Plan]) -> Plan | None:
    """When a known plan was made for exactly this network (a failure healed), the best known
    decisions that fit it, with no solving; None otherwise."""
    same = topo.to_dict()
    if not any(plan.topology.to_dict() == same for plan in known):
        return None
    kept = [k for k in (keep_on(p, topo) for p in known) if k is not None]
    return max(kept, key=lambda p: round(p.rate, 9), default=None)


def _rerouted(topo: Topology, scheme: str, seed: int, current: Plan,
              known: list[Plan]) -> Plan:
    """Phase 2 afresh, unless a known plan's decisions still fit and do at least as well
    (ties go to the plan running now, then to earlier ones: no churn for nothing)."""
    fresh = route(topo, current.partition, scheme, seed)
    kept = [k for k in (keep_on(p, topo) for p in known) if k is not None]
    return max(kept + [fresh], key=lambda p: round(p.rate, 9))
