"""RAT's transfers per stage, counted over all n trees at once.

``host_stack.collectives.rat.build_trees`` lists every tree's edges: n trees of n-1 edges,
67 million at 8,192 workers, which no simulation needs one by one.  This computes the same
trees (same regions, same mixed-radix choice of each region's aggregator, tree t rooted at
rank t) as arrays over t with numpy and returns, per stage, how many trees send from rank a to
rank b; tests check it equals build_trees' edges.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from host_stack.collectives.rat import Hierarchy


def stage_pairs(h: Hierarchy) -> list[Counter[tuple[int, int]]]:
    """Per stage (leaves first): (child rank, parent rank) -> number of trees with that edge."""
    workers = h.workers
    n = len(workers)
    rank = {w: i for i, w in enumerate(workers)}
    t = np.arange(n, dtype=np.int64)
    # aggregator of every region for every tree t; the workers aggregate themselves
    agg: dict[frozenset[str], np.ndarray] = {frozenset([w]): np.full(n, rank[w], np.int64)
                                             for w in workers}
    children: list[frozenset[str]] = list(agg)
    stride = 1
    out = []
    for level in [*h.levels, (frozenset(workers),)]:
        owner = {w: i for i, reg in enumerate(level) for w in reg}
        kids_of: list[list[frozenset[str]]] = [[] for _ in level]
        for c in children:
            kids_of[owner[next(iter(c))]].append(c)
        pairs: Counter[tuple[int, int]] = Counter()
        widest = 1
        for reg, kids in zip(level, kids_of, strict=True):
            kids.sort(key=lambda c: min(rank[w] for w in c))
            widest = max(widest, len(kids))
            stacked = np.stack([agg[c] for c in kids])
            chosen = stacked[(t // stride) % len(kids), t]
            inside = np.zeros(n, dtype=bool)
            inside[[rank[w] for w in reg]] = True
            mine = np.where(inside, t, chosen)
            agg[reg] = mine
            codes = [a[a != mine] * n + mine[a != mine] for a in stacked]
            values, counts = np.unique(np.concatenate(codes), return_counts=True)
            pairs.update({(int(v // n), int(v % n)): int(c)
                          for v, c in zip(values, counts, strict=True)})
        out.append(pairs)
        children = list(level)
        stride *= widest
    return out
