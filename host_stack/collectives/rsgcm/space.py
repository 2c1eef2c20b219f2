"""Connection graphs, the paper's Algorithm 1 (action construction) and the searching space.

Choices where the paper is ambiguous (each is tested):
- A device's adjacency list Adj[K] is its *available* neighbours (devices still in DAM over
  links still in CAM) in increasing label order; m is the largest degree of G.
- When Adj[K][P] does not exist, is already in the ring, or closes an f-ring that is not a
  cycle, P <- (P + 1) mod m and the step is retried; after m failed tries the ring from this
  start is abandoned.  P carries over between steps, rings and ring-sets, as in the listing.
- Rings of a ring-set start from I, then from the next still-available device after I in
  cyclic label order (the paper's Fig. 4 example: I=1 gives [1,5,6,2] then [3,7,4,0]); each
  start is tried once, and the ring-set ends when fewer than f devices remain.
- Every ring-set starts with all devices available again (DAM reset) but only the links the
  earlier ring-sets did not use (CAM carries over): links are used once per action.
- The data is cut into S blocks; the S ring-sets of an action work on distinct blocks, and
  every assignment of blocks to ring-sets is a separate action.
- Factor list: f in DNL = [N, ..., N+E] factors with 3 <= f < U; defaults E=0, U=N+1.
- Actions are deduplicated by their rings as cycles (rotation/reflection) and blocks: two
  actions that differ only in where a ring starts move the same data at the same cost.  With
  ``distinct=False`` only identical listings are merged, which is closer to how the paper counts
  (3x3 torus, E=0: 49 actions for S=1 against the paper's 47).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx
import numpy as np

Ring = tuple[int, ...]


@dataclass(frozen=True)
class Action:
    """Ring-sets run at once; ring-set s reduces block ``blocks[s]`` over each of its rings."""

    ringsets: tuple[tuple[Ring, ...], ...]
    blocks: tuple[int, ...]

    def key(self) -> frozenset:
        """Identity for deduplication: which rings (as cycles) work on which block."""
        return frozenset((b, frozenset(canonical(r) for r in rs))
                         for rs, b in zip(self.ringsets, self.blocks, strict=True) if rs)

    def rings(self) -> list[tuple[Ring, int]]:
        """Every (ring, block) pair of the action."""
        return [(r, b) for rs, b in zip(self.ringsets, self.blocks, strict=True) for r in rs]


def canonical(ring: Ring) -> Ring:
    """The ring as a cycle, independent of start and direction."""
    i = ring.index(min(ring))
    fwd = ring[i:] + ring[:i]
    back = (fwd[0],) + tuple(reversed(fwd[1:]))
    return min(fwd, back)


def from_matrix(matrix: np.ndarray | list[list[int]]) -> nx.Graph:
    """Connection matrix G (N x N, symmetric, nonzero = link) -> graph on devices 0..N-1."""
    m = np.asarray(matrix)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"connection matrix: expected N x N, got shape {m.shape}")
    if not np.array_equal(m != 0, (m != 0).T):
        raise ValueError("connection matrix: expected a symmetric matrix (links are duplex)")
    g = nx.Graph()
    g.add_nodes_from(range(m.shape[0]))
    g.add_edges_from((i, j) for i, j in zip(*np.nonzero(m), strict=True) if i < j)
    return g


def torus(rows: int, cols: int) -> nx.Graph:
    """2-D torus grid (the paper's 'mesh grid' for 2D-Torus/2D-Mesh): device r*cols + c."""
    g = nx.Graph()
    g.add_nodes_from(range(rows * cols))
    for r, c in itertools.product(range(rows), range(cols)):
        me = r * cols + c
        for other in (r * cols + (c + 1) % cols, ((r + 1) % rows) * cols + c):
            if other != me:
                g.add_edge(me, other)
    return g


def grid_shape(n: int) -> tuple[int, int]:
    """The squarest rows x cols = n (rows <= cols); a prime n gives a 1 x n ring."""
    rows = max(r for r in range(1, math.isqrt(n) + 1) if n % r == 0)
    return rows, n // rows


def fail_link(g: nx.Graph, a: int, b: int) -> nx.Graph:
    """A copy of ``g`` without link a-b."""
    if not g.has_edge(a, b):
        raise ValueError(f"link {a}-{b}: not in the connection graph")
    out = g.copy()
    out.remove_edge(a, b)
    return out


def fail_device(g: nx.Graph, d: int) -> nx.Graph:
    """A copy of ``g`` without device d (the others keep their labels)."""
    if d not in g:
        raise ValueError(f"device {d}: not in the connection graph")
    out = g.copy()
    out.remove_node(d)
    return out


def factor_list(n: int, extension: int = 0, upper: int | None = None) -> list[int]:
    """Ring sizes f: factors of N..N+E with 3 <= f < U (U defaults to N+1).

    With N = 2 no 3-ring exists; we then allow f = 2 (a pairwise exchange) so that two devices
    still get a schedule."""
    upper = n + 1 if upper is None else upper
    low = min(3, n)
    return sorted({f for d in range(n, n + extension + 1) for f in range(max(low, 2), upper)
                   if d % f == 0 and f <= n})


def _ring_from(start: int, f: int, p: int, m: int, dam: set[int],
               cam: nx.Graph) -> tuple[Ring | None, int]:
    """Walk from ``start`` by priority P until an f-ring closes; returns (ring or None, P)."""
    ring = [start]
    k = start
    while True:
        for _ in range(m):
            adj = sorted(n for n in cam.neighbors(k) if n in dam)
            cand = adj[p] if p < len(adj) else None
            ok = cand is not None and cand not in ring
            if ok and len(ring) + 1 == f and f > 2:
                ok = cam.has_edge(cand, start)
            if ok:
                break
            p = (p + 1) % m
        else:
            return None, p
        ring.append(cand)
        if len(ring) == f:
            return tuple(ring), p
        k = cand


def construct(g: nx.Graph, s: int, f: int, initial: int, priority: int) -> Action | None:
    """Algorithm 1: the ring-sets of one action (block 0..S-1 in order), or None if empty."""
    devices = sorted(g.nodes)
    m = max((d for _, d in g.degree), default=0)
    if m == 0 or f > len(devices):
        return None
    cam = nx.Graph(g)
    p = priority % m
    ringsets = []
    for _ in range(s):
        dam = set(devices)
        rings = []
        i0 = devices.index(initial)
        for j in range(len(devices)):
            start = devices[(i0 + j) % len(devices)]
            if len(dam) < f:
                break
            if start not in dam:
                continue
            ring, p = _ring_from(start, f, p, m, dam, cam)
            if ring is not None:
                rings.append(ring)
                dam -= set(ring)
                cam.remove_edges_from(zip(ring, ring[1:] + ring[:1], strict=True))
        ringsets.append(tuple(rings))
    if not any(ringsets):
        return None
    return Action(tuple(ringsets), tuple(range(s)))


def search_space(g: nx.Graph, s: int = 1, extension: int = 0, upper: int | None = None,
                 distinct: bool = True) -> list[Action]:
    """All actions over f in the factor list, initial device I and priority P (see module)."""
    if s not in (1, 2):
        raise ValueError(f"S: expected 1 or 2 (concurrent send/receive pairs), got {s}")
    devices = sorted(g.nodes)
    m = max((d for _, d in g.degree), default=0)
    seen: dict[object, Action] = {}
    for f in factor_list(len(devices), extension, upper):
        for initial, priority in itertools.product(devices, range(m)):
            base = construct(g, s, f, initial, priority)
            if base is None:
                continue
            for blocks in itertools.permutations(range(s)):
                act = Action(base.ringsets, tuple(blocks))
                seen.setdefault(act.key() if distinct else (act.ringsets, act.blocks), act)
    return list(seen.values())


def filter_space(actions: Iterable[Action], g: nx.Graph) -> list[Action]:
    """Keep the actions whose rings all exist in ``g`` (after a link or device failure)."""
    def alive(r: Ring) -> bool:
        return all(g.has_edge(a, b) for a, b in zip(r, r[1:] + r[:1], strict=True))
    return [a for a in actions if all(alive(r) for r, _ in a.rings())]
