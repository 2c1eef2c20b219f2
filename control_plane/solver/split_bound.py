"""A bound on the rate of every plan of a two-PS instance, whatever its split.

Why: the exact MILP (milp.py) over every simple path rarely closes its gap in a minute (its
relaxation splits flows over paths), so its best plan alone proves nothing.  The count LP
(count_lp.py) bounds the plans of one split tightly; this turns bounds at a few splits into
one for all splits.

Plans are down-closed in the PS rates: decisions that carry (g1, g2) also carry anything
below it.  A plan of rate F and share x* for the first PS carries (x* F, (1 - x*) F); for a
split a <= x* the point (a t, (1 - a) t) with t = F (1 - x*) / (1 - a) lies below it, so
the best plan at split a reaches at least F (1 - x*) / (1 - a), and likewise the best at
b >= x* reaches F x* / b.  So every plan with x* in [a, b] has

    F <= min(U(a) (1 - a) / (1 - b), U(b) b / a)

for any upper bounds U at the two ends.  Intervals are halved where this exceeds the target
(the best rate known, plus `rel`) until every interval is under it or the LP budget is
spent; the largest interval bound is the result either way.
"""

from __future__ import annotations

import heapq
import math

from control_plane.model.topology import Topology
from control_plane.solver.count_lp import CountLP
from control_plane.solver.l_inart import l_inart
from control_plane.solver.paths import PathSets

GRID = 20  # first intervals
MIN_WIDTH = 1e-4  # intervals are not halved below this width
BOUND_REL = 2e-3  # precision of each split's count LP bound above the best rate


def free_split_bound(topo: Topology, paths: PathSets, best: float, rel: float = 0.01,
                     max_splits: int = 400) -> float:
    """An upper bound on every plan's rate over `paths` and every split (two PSs; other
    instances get Eq. 2's optimum).  `best`: a rate some plan reaches; the search stops
    once the bound is within `rel` of it, or after `max_splits` count LP bounds."""
    eq2 = l_inart(topo).rate
    if len(topo.pss) != 2:
        return eq2
    first, second = topo.pss
    lp = CountLP(topo, paths)
    floor = max(best, 0.0)
    cache: dict[float, float] = {}

    def upper(x: float) -> float:
        """The count LP's bound at split x: below the best rate it is searched for from 0
        (splits far from the best one prune their intervals), above it galloped to."""
        if x not in cache:
            lp.use_split({first: x, second: 1 - x})
            probe = floor * (1 + BOUND_REL)
            if floor <= 0:
                cache[x] = lp.bound(0.0, eq2).rate
            elif lp.feasible_at(probe) is None:
                cache[x] = lp.bound(0.0, probe).rate
            else:
                cache[x] = lp.bound_from(floor, eq2, rel=BOUND_REL).rate
        return cache[x]

    def interval(a: float, b: float) -> float:
        left = upper(a) * (1 - a) / (1 - b) if b < 1 else math.inf
        right = upper(b) * b / a if a > 0 else math.inf
        return min(left, right, eq2)

    target = floor * (1 + rel)
    heap = [(-interval(i / GRID, (i + 1) / GRID), i / GRID, (i + 1) / GRID)
            for i in range(GRID)]
    heapq.heapify(heap)
    while len(cache) < max_splits:
        neg, a, b = heap[0]
        if -neg <= target or b - a < MIN_WIDTH:
            break
        heapq.heappop(heap)
        mid = (a + b) / 2
        heapq.heappush(heap, (-interval(a, mid), a, mid))
        heapq.heappush(heap, (-interval(mid, b), mid, b))
    return -heap[0][0]
