"""Closed-form alpha-beta costs of classical all-reduce schedules (the paper's Table 4).

Table 4's simplified forms (F1..F3) are garbled in the text; these are the per-phase sums it
tabulates, written with ``ring_time`` (2 alpha (f-1) + 2 beta (f-1) d / f).  With them the
paper's Eq. 18 holds exactly: on a sqrt(N) x sqrt(N) grid, 2D-mesh beats the double ring iff
alpha / beta > D / (2N).
"""

from __future__ import annotations

import math

from host_stack.collectives.rsgcm.env import ring_time


def ring(d: float, n: int, alpha: float, beta: float) -> float:
    """Baidu ring over n devices."""
    return ring_time(n, d, alpha, beta)


def double_ring(d: float, n: int, alpha: float, beta: float) -> float:
    """Two rings over all n devices at once, each on half the data (needs S=2)."""
    return ring_time(n, d / 2, alpha, beta)


def butterfly(d: float, n: int, alpha: float, beta: float) -> float:
    """ceil(log2 n) exchanges of the whole data."""
    return math.ceil(math.log2(n)) * (alpha + beta * d) if n > 1 else 0.0


def recursive_tree(d: float, n: int, alpha: float, beta: float) -> float:
    """Reduce up and broadcast down a binary tree: twice the butterfly's steps."""
    return 2 * butterfly(d, n, alpha, beta)


def torus_2d(d: float, rows: int, cols: int, alpha: float, beta: float) -> float:
    """All-reduce along rows, then along columns (S=1)."""
    return ring_time(cols, d, alpha, beta) + ring_time(rows, d, alpha, beta)


def mesh_2d(d: float, rows: int, cols: int, alpha: float, beta: float) -> float:
    """Two steps; in each, rows and columns run at once on the two halves (S=2)."""
    return 2 * max(ring_time(rows, d / 2, alpha, beta), ring_time(cols, d / 2, alpha, beta))


def hierarchical(d: float, n: int, group: int, alpha: float, beta: float) -> float:
    """Hybrid all-reduce: rings inside groups of u, across the n/u groups, plus one hop."""
    if n % group:
        raise ValueError(f"group={group}: expected a divisor of n={n}")
    return (ring_time(group, d, alpha, beta) + ring_time(n // group, d, alpha, beta)
            + alpha + beta * d)


def mesh_beats_double_ring(d: float, n: int, alpha: float, beta: float) -> bool:
    """Eq. 18: alpha / beta > D / (2N)."""
    return alpha / beta > d / (2 * n)


def all_costs(d: float, rows: int, cols: int, alpha: float, beta: float) -> dict[str, float]:
    """Every classical schedule on a rows x cols grid, by name (seconds)."""
    n = rows * cols
    return {
        "ring": ring(d, n, alpha, beta),
        "double_ring": double_ring(d, n, alpha, beta),
        "butterfly": butterfly(d, n, alpha, beta),
        "recursive_tree": recursive_tree(d, n, alpha, beta),
        "torus_2d": torus_2d(d, rows, cols, alpha, beta),
        "mesh_2d": mesh_2d(d, rows, cols, alpha, beta),
        "hierarchical": hierarchical(d, n, rows, alpha, beta),
    }
