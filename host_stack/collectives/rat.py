"""RAT (Resilient Allreduce Trees): regions of a topology, one reduce/broadcast tree per root.

Input is an undirected ``networkx.Graph`` whose nodes carry ``kind`` in {worker, ps, switch}
(what ``control_plane.model.topology.Topology.graph`` exposes).  Regions come from the structure
alone, so any tree-shaped data-centre topology works:

- a ToR is a switch adjacent to a host; a switch's *layer* is its hop distance to the nearest
  ToR through switches (ToR 0, aggregation 1, core 2 in a fat-tree; leaf 0, spine 1);
- level-0 regions are racks (the workers under one ToR); level-k regions (k >= 1) are the
  connected components of the switches of layer <= k (pods in a fat-tree, the whole cluster in
  a leaf-spine); a level that merges nothing is dropped, and the first level with a single
  region is the root's, so l (the paper's number of oversubscribed layers) counts the levels
  below it: leaf-spine l=1, fat-tree l=2, one rack l=0 (which degenerates to a PS).

Per tree (root r, index t): a region that contains r is aggregated by r; any other region is
aggregated by one of its children's aggregators, picked by digit k of t in a mixed-radix count
(radix = children per region at each level), so the n trees spread the aggregation work evenly
(the paper gives no rule; this is our choice, tested for balance).
The data is split evenly across the n trees (the paper's load balancing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx

KINDS = ("worker", "ps", "switch")


@dataclass(frozen=True)
class Hierarchy:
    """Workers in rank order and the partitions of them, racks first, root level excluded."""

    workers: tuple[str, ...]
    levels: tuple[tuple[frozenset[str], ...], ...]

    @property
    def l(self) -> int:  # noqa: E743 - the paper's name for the number of oversubscribed layers
        """Number of oversubscribed region levels below the root."""
        return len(self.levels)

    def region_of(self, level: int) -> dict[str, int]:
        """Worker -> index of its region at ``level`` (``l`` is the root level: all 0)."""
        if level >= self.l:
            return {w: 0 for w in self.workers}
        return {w: i for i, reg in enumerate(self.levels[level]) for w in reg}


@dataclass
class Tree:
    """One RAT tree: edges (child rank, parent rank) per stage, stage 0 at the leaves."""

    root: int
    stages: list[list[tuple[int, int]]] = field(default_factory=list)

    def depth(self) -> int:
        """Longest leaf-to-root path in edges; the dependency chain is twice this."""
        parent = {c: p for stage in self.stages for c, p in stage}
        best = 0
        for node in parent:
            hops, cur = 0, node
            while cur in parent:
                cur, hops = parent[cur], hops + 1
            best = max(best, hops)
        return best


def _check_graph(graph: nx.Graph) -> None:
    for node, data in graph.nodes(data=True):
        if data.get("kind") not in KINDS:
            raise ValueError(f"node '{node}': attribute 'kind' must be one of {KINDS}, "
                             f"got {data.get('kind')!r}")


def hierarchy(graph: nx.Graph, workers: Sequence[str] | None = None) -> Hierarchy:
    """Derive the region levels of ``graph`` for ``workers`` (default: all workers, sorted)."""
    _check_graph(graph)
    kind = nx.get_node_attributes(graph, "kind")
    if workers is None:
        workers = sorted((n for n, k in kind.items() if k == "worker"), key=str)
    workers = tuple(workers)
    if not workers:
        raise ValueError("workers: the topology has no node of kind 'worker'")
    tor: dict[str, str] = {}
    for w in workers:
        if kind.get(w) not in ("worker", "ps"):
            raise ValueError(f"workers: '{w}' is not a host (kind worker/ps) of the topology")
        ups = sorted((s for s in graph.neighbors(w) if kind[s] == "switch"), key=str)
        if len(ups) != 1:
            raise ValueError(f"node '{w}': expected exactly one ToR switch neighbour, got {ups}")
        tor[w] = ups[0]
    switches = [n for n, k in kind.items() if k == "switch"]
    sw_graph = graph.subgraph(switches)
    tors = {n for n in switches if any(kind[h] != "switch" for h in graph.neighbors(n))}
    layer = nx.multi_source_dijkstra_path_length(sw_graph, tors)
    levels: list[tuple[frozenset[str], ...]] = []
    prev: set[frozenset[str]] = set()
    for k in range(max(layer.values()) + 2):  # the last k takes every switch
        if k == 0:
            groups: dict[object, set[str]] = {}
            for w in workers:
                groups.setdefault(tor[w], set()).add(w)
        else:
            sub = sw_graph.subgraph([s for s, d in layer.items() if d <= k])
            comp = {s: i for i, c in enumerate(nx.connected_components(sub)) for s in c}
            groups = {}
            for w in workers:
                groups.setdefault(comp[tor[w]], set()).add(w)
        part = {frozenset(g) for g in groups.values()}
        if len(part) == 1:
            return Hierarchy(workers, tuple(levels))
        if part != prev:
            levels.append(tuple(sorted(part, key=lambda r: workers.index(min(
                r, key=workers.index)))))
            prev = part
    raise ValueError("topology: the workers are not connected through its switches")


def build_trees(h: Hierarchy) -> list[Tree]:
    """One tree per worker as root (rank order), regions aggregated as the module explains."""
    rank = {w: i for i, w in enumerate(h.workers)}
    trees = []
    for t, root in enumerate(h.workers):
        # aggregator of every region, bottom-up; level -1 regions are the workers themselves
        agg: dict[frozenset[str], str] = {frozenset([w]): w for w in h.workers}
        children: list[frozenset[str]] = list(agg)
        tree = Tree(root=rank[root])
        stride = 1  # mixed-radix counter over levels, so choices at different levels decorrelate
        for level in [*h.levels, (frozenset(h.workers),)]:
            stage = []
            widest = 1
            for reg in level:
                kids = sorted((c for c in children if c <= reg),
                              key=lambda c: min(rank[w] for w in c))
                widest = max(widest, len(kids))
                agg[reg] = root if root in reg else agg[kids[(t // stride) % len(kids)]]
                stage += [(rank[agg[c]], rank[agg[reg]]) for c in kids if agg[c] != agg[reg]]
            tree.stages.append(stage)
            children = list(level)
            stride *= widest
        trees.append(tree)
    return trees


def chain_length(tree: Tree) -> int:
    """Dependency chain (reduce then broadcast) of one tree: 2 x its depth."""
    return 2 * tree.depth()


def cross_region_bytes(edges: Sequence[tuple[int, int, float]], h: Hierarchy,
                       level: int) -> float:
    """Bytes on (src rank, dst rank, bytes) transfers that leave a level-``level`` region."""
    reg = h.region_of(level)
    return float(sum(b for s, d, b in edges
                     if reg[h.workers[s]] != reg[h.workers[d]]))


def tree_transfers(tree: Tree, nbytes: float) -> list[tuple[int, int, float]]:
    """Every transfer of one tree carrying ``nbytes`` (its slice): reduce up, broadcast down."""
    up = [(c, p, nbytes) for stage in tree.stages for c, p in stage]
    return up + [(p, c, b) for c, p, b in up]


def ring_transfers(world: int, nbytes: float) -> list[tuple[int, int, float]]:
    """A ring in rank order: each hop carries 2(n-1)/n of the data (reduce-scatter+gather)."""
    return [(i, (i + 1) % world, 2 * (world - 1) / world * nbytes) for i in range(world)]


def ps_transfers(world: int, nbytes: float) -> list[tuple[int, int, float]]:
    """Sharded PS co-located on every worker (the paper's setup): push and pull D/n shards."""
    share = nbytes / world
    return [(i, j, share) for i in range(world) for j in range(world) if i != j] * 2


def rack_topology(world: int, hosts_per_rack: int) -> nx.Graph:
    """``world`` workers in racks of ``hosts_per_rack`` under one spine: the default cluster a
    tree assumes when no topology is given (one oversubscribed layer, the racks' uplinks)."""
    if world < 1 or hosts_per_rack < 1:
        raise ValueError(f"world={world}, hosts_per_rack={hosts_per_rack}: expected >= 1")
    g = nx.Graph()
    g.add_node("spine", kind="switch")
    for r in range((world + hosts_per_rack - 1) // hosts_per_rack):
        g.add_node(f"tor{r}", kind="switch")
        g.add_edge(f"tor{r}", "spine")
    for w in range(world):
        g.add_node(f"w{w}", kind="worker")
        g.add_edge(f"w{w}", f"tor{w // hosts_per_rack}")
    return g
