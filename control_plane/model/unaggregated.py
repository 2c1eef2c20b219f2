"""Where the packets of an aggregated flow go when its aggregation switch passes them on.

A flow w -> s aggregated at v reaches v on its plan path w..v (its segment).  The packets
that v forwards unaggregated (RETX, collisions, slots outside the pool: DESIGN.md sec. 4)
keep their (w, s) addresses and continue to s.  Switches forward them by (source,
destination) alone, so on each switch the pair has ONE next hop: their route from v to s
(the tail) must not pass a switch of the segment again, which already sends the pair
towards v (the packets would loop, or the two entries conflict).  The tail is the stream
path v..s where that avoids the segment's switches, else the shortest path from v to s
that does; a flow with neither cannot be installed.

One function decides it for everyone: the deploy layer installs the tail it returns
(deploy/entries.py), the plan validator refuses a plan where it returns none
(model/plan.py), and the solver offers only segments that have one (solver/paths.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import networkx as nx

from control_plane.model.topology import Topology, natural_key

Path_ = tuple[str, ...]


def switch_bfs(topo: Topology, root: str, avoid: frozenset[str] = frozenset(),
               graph: nx.Graph | None = None) -> dict[str, str]:
    """Parent pointers of a breadth-first search from `root` over the links of `graph`
    (default: the topology's), hosts never transit nodes, nodes of `avoid` left out,
    neighbours in natural id order: parent[u] is u's next hop towards `root`."""
    graph = topo.graph if graph is None else graph
    nodes = topo.nodes
    parent = {root: root}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        if node != root and nodes[node].kind != "switch":
            continue  # hosts are never transit nodes
        for nb in sorted(graph[node], key=natural_key):
            if nb not in parent and nb not in avoid:
                parent[nb] = node
                queue.append(nb)
    return parent


def unaggregated_tail(topo: Topology, segment: Path_, ps: str, prefer: Iterable[Path_] = (),
                      graph: nx.Graph | None = None) -> Path_ | None:
    """The route v..ps of the unaggregated packets of a flow that reaches its aggregation
    switch v = segment[-1] on `segment`: the first path of `prefer` (the stream path) that
    passes no switch of the segment again, else the shortest such path over `graph`
    (default: the topology's links); None if every path from v to ps does."""
    before = frozenset(segment[:-1])
    for path in prefer:
        if not before.intersection(path[1:]):
            return tuple(path)
    v = segment[-1]
    parent = switch_bfs(topo, ps, avoid=before, graph=graph)
    if v not in parent:
        return None
    out = [v]
    while out[-1] != ps:
        out.append(parent[out[-1]])
    return tuple(out)
