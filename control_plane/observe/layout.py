"""Where each node of a topology is drawn: a layered picture that reads like the usual
drawings of fig1, leaf-spine and fat-trees (hosts at the bottom under their top-of-rack
switch, then each tier of switches above the one below it).

Tiers: hosts 0, switches with a host 1, then every other switch one more than its nearest
tier-1 switch.  Within a tier, nodes are ordered by the mean position of their neighbours in
the tier below (one barycentre pass, top-down from the hosts' order), which keeps a fat-tree's
pods together without a general graph-drawing library.
"""

from __future__ import annotations

from statistics import mean

import networkx as nx

from control_plane.model.topology import Topology, natural_key

WIDTH = 1000.0  # the drawing's own units; the page scales the SVG to its box
TIER_GAP = 140.0
MARGIN = 40.0
CROWDED = 16.0  # nodes closer than this along a tier are staggered over two rows
STAGGER = 22.0


def tiers(topo: Topology) -> dict[str, int]:
    """Node -> tier (0 hosts, 1 top-of-rack switches, upwards)."""
    graph = topo.graph
    hosts = [n for n in topo.nodes if topo.nodes[n].kind != "switch"]
    tor = {sw for h in hosts for sw in graph[h] if topo.nodes[sw].kind == "switch"}
    fabric = graph.subgraph(topo.switches)
    out = dict.fromkeys(hosts, 0)
    if tor:
        dist = nx.multi_source_dijkstra_path_length(fabric, tor)
        out.update({sw: 1 + int(d) for sw, d in dist.items()})
    for sw in topo.switches:  # a switch cut off from every top-of-rack one
        out.setdefault(sw, 1)
    return out


def layout(topo: Topology) -> dict[str, tuple[float, float]]:
    """Node -> (x, y) in a WIDTH-wide drawing, y growing downwards (SVG's)."""
    tier = tiers(topo)
    top = max(tier.values(), default=0)
    graph = topo.graph
    # hosts grouped by their top-of-rack switch, switches in natural order to start with
    order: dict[int, list[str]] = {}
    for node in sorted(topo.nodes, key=natural_key):
        order.setdefault(tier[node], []).append(node)
    hosts = order.get(0, [])
    hosts.sort(key=lambda h: (natural_key(topo.tor(h)) if any(
        topo.nodes[n].kind == "switch" for n in graph[h]) else (), natural_key(h)))
    pos: dict[str, tuple[float, float]] = {}

    def place(level: int, nodes: list[str]) -> None:
        step = (WIDTH - 2 * MARGIN) / max(len(nodes), 1)
        y = MARGIN + (top - level) * TIER_GAP
        # a crowded tier (a fat-tree's hosts) alternates between two rows, so marks stay apart
        stagger = STAGGER if step < CROWDED else 0.0
        for i, node in enumerate(nodes):
            pos[node] = (MARGIN + step * (i + 0.5), y + (stagger if i % 2 else 0.0))

    place(0, hosts)
    for level in range(1, top + 1):
        nodes = order.get(level, [])

        def centre(node: str, level: int = level) -> float:
            below = [pos[n][0] for n in graph[node] if n in pos and tier[n] < level]
            return mean(below) if below else WIDTH / 2
        nodes.sort(key=lambda n: (centre(n), natural_key(n)))
        place(level, nodes)
    return pos


def height(topo: Topology) -> float:
    """The drawing's height for ``layout``'s positions (a staggered tier included)."""
    return 2 * MARGIN + max(tiers(topo).values(), default=0) * TIER_GAP + STAGGER
