"""Routes the collectives' TCP traffic takes: the emulation's destination routes.

Every switch forwards non-INA traffic to a host along a BFS tree from that host through the
switches, neighbours in natural id order (control_plane/deploy/entries.py ``dst_routes``), so
the simulated ring, tree and RSGCM transfers cross exactly the links they cross there.  The BFS
of a host equals the BFS from its switches, so trees are cached per set of attached switches.
"""

from __future__ import annotations

from collections import deque

from control_plane.model.topology import Topology, natural_key


class DstRouter:
    """``path(src, dst)``: the node sequence from host ``src`` to host ``dst``."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.graph = topo.graph
        self.switch = {n: topo.nodes[n].kind == "switch" for n in topo.nodes}
        self._trees: dict[tuple[str, ...], dict[str, str]] = {}

    def _uplinks(self, host: str) -> tuple[str, ...]:
        return tuple(sorted((n for n in self.graph[host] if self.switch[n]), key=natural_key))

    def _tree(self, host: str) -> dict[str, str]:
        """parent[u]: the next hop from switch u towards ``host`` (the host for its switches)."""
        seeds = self._uplinks(host)
        tree = self._trees.get(seeds)
        if tree is None:
            tree = {s: "" for s in seeds}
            queue = deque(seeds)
            while queue:
                node = queue.popleft()
                for nb in sorted(self.graph[node], key=natural_key):
                    if nb not in tree and self.switch[nb]:
                        tree[nb] = node
                        queue.append(nb)
            self._trees[seeds] = tree
        return tree

    def path(self, src: str, dst: str) -> tuple[str, ...]:
        tree = self._tree(dst)
        ups = [s for s in self._uplinks(src) if s in tree]
        if not ups:
            raise ValueError(f"route {src}->{dst}: no path through the switches")
        node, out = ups[0], [src, ups[0]]
        while tree[node]:
            node = tree[node]
            out.append(node)
        out.append(dst)
        return tuple(out)
