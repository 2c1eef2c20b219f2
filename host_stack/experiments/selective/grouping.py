"""Which ready workers synchronise together: ring cost (Eq. 2), BAG (Alg. 1), partial reduce.

Workers are identified by any hashable id; bandwidths are a mapping id -> bytes/s (any unit,
as long as the model size v uses the matching one).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

Worker = Hashable


def ring_time(size: int, min_bw: float, v: float, alpha: float) -> float:
    """Ring all-reduce time of Eq. 2: 2(m-1) alpha + 2 (m-1)/m v / min b (0 for m <= 1)."""
    if size <= 1:
        return 0.0
    if min_bw <= 0:
        raise ValueError(f"min_bw: expected a positive bandwidth, got {min_bw}")
    return 2 * (size - 1) * alpha + 2 * (size - 1) / size * v / min_bw


def group_time(group: Sequence[Worker], bw: Mapping[Worker, float], v: float,
               alpha: float) -> float:
    """Eq. 2 for a concrete group: its ring is as slow as its slowest member's edge link."""
    return ring_time(len(group), min(bw[w] for w in group), v, alpha)


def bag(queue: Sequence[Worker], p: int, eta: float,
        bw: Mapping[Worker, float]) -> list[list[Worker]]:
    """Bandwidth-aware grouping (Alg. 1).

    Sort by bandwidth, non-increasing; each group takes p base members and then every further
    worker whose bandwidth is at least (1 - eta) times the p-th (slowest) base member's.

    Choice: the printed test ``len(g) <= p`` admits p + 1 base members; the prose (and the
    stated time penalty v/b * eta/(1-eta)) says p, so we use ``len(g) < p``.  Ties keep the
    queue order (stable sort) so decisions are deterministic.  The last group may hold fewer
    than p workers; callers never launch such a group.
    """
    if p < 1:
        raise ValueError(f"p: expected a group size >= 1, got {p}")
    if not 0 <= eta < 1:
        raise ValueError(f"eta: expected 0 <= eta < 1, got {eta}")
    ordered = sorted(queue, key=lambda w: -bw[w])
    groups: list[list[Worker]] = []
    group: list[Worker] = []
    threshold = 0.0
    for w in ordered:
        if len(group) < p:
            group.append(w)
            threshold = bw[w] * (1 - eta)
        elif bw[w] >= threshold:
            group.append(w)
        else:
            groups.append(group)
            group = [w]
            threshold = bw[w] * (1 - eta)
    if group:
        groups.append(group)
    return groups


def partial_groups(queue: list[Worker], p: int) -> list[list[Worker]]:
    """Partial reduce: pop the first p ready workers, as often as p are queued (FIFO)."""
    if p < 1:
        raise ValueError(f"p: expected a group size >= 1, got {p}")
    out: list[list[Worker]] = []
    while len(queue) >= p:
        out.append(queue[:p])
        del queue[:p]
    return out
