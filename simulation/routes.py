"""Routes of the collectives' TCP traffic, two ways.

- ``dst``: the emulation's destination routes.  Every switch forwards non-INA traffic to a
  host along a BFS tree from that host through the switches, neighbours in natural id order
  (control_plane/deploy/entries.py ``dst_routes``), so the transfers cross exactly the links
  they cross in the emulation.  On a fat-tree this sends all traffic between two pods through
  one core switch: fine at k=4, a bottleneck no data centre has at k=16.
- ``ecmp`` (the default): a shortest path chosen hop by hop among the equal-cost next hops by
  a hash of (source, destination), as ECMP switches do with a flow's 5-tuple.

A host's BFS equals the BFS from its switches, so distances are cached per set of attached
switches (per ToR on a fat-tree).
"""

from __future__ import annotations

import zlib
from collections import deque

from control_plane.model.topology import Topology, natural_key

ROUTINGS = ("ecmp", "dst")


class Router:
    """``path(src, dst)``: the node sequence from host ``src`` to host ``dst``."""

    def __init__(self, topo: Topology, routing: str = "ecmp") -> None:
        if routing not in ROUTINGS:
            raise ValueError(f"routing {routing!r}: expected one of {', '.join(ROUTINGS)}")
        self.routing = routing
        self.graph = topo.graph
        self.switch = {n: topo.nodes[n].kind == "switch" for n in topo.nodes}
        self.nbrs = {n: sorted((m for m in self.graph[n] if self.switch[m]), key=natural_key)
                     for n in topo.nodes}
        self._bfs: dict[tuple[str, ...], tuple[dict[str, int], dict[str, str]]] = {}

    def _tree(self, host: str) -> tuple[dict[str, int], dict[str, str]]:
        """(distance to ``host``, BFS parent towards it) for every switch that reaches it."""
        seeds = tuple(self.nbrs[host])
        found = self._bfs.get(seeds)
        if found is None:
            dist = {s: 1 for s in seeds}
            parent = {s: "" for s in seeds}
            queue = deque(seeds)
            while queue:
                node = queue.popleft()
                for nb in self.nbrs[node]:
                    if nb not in dist:
                        dist[nb] = dist[node] + 1
                        parent[nb] = node
                        queue.append(nb)
            found = self._bfs[seeds] = (dist, parent)
        return found

    def path(self, src: str, dst: str) -> tuple[str, ...]:
        dist, parent = self._tree(dst)
        ups = [s for s in self.nbrs[src] if s in dist]
        if not ups:
            raise ValueError(f"route {src}->{dst}: no path through the switches")
        key = zlib.crc32(f"{src}>{dst}".encode())
        if self.routing == "dst":
            node = ups[0]
        else:
            best = min(dist[s] for s in ups)
            ups = [s for s in ups if dist[s] == best]
            node = ups[key % len(ups)]
        out = [src, node]
        while dist[node] > 1:
            if self.routing == "dst":
                node = parent[node]
            else:
                nexts = [m for m in self.nbrs[node] if dist.get(m, 0) == dist[node] - 1]
                node = nexts[zlib.crc32(node.encode(), key) % len(nexts)]
            out.append(node)
        out.append(dst)
        return tuple(out)
