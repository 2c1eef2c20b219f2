"""Which server runs each node of an emulation spread over several servers.

The policy, in order:

1. A node the servers file pins (``placement:``) runs there; a pinned switch takes its hosts.
2. Every worker and PS runs with its ToR switch: host links never cross servers, so only
   switch-to-switch links become tunnels.
3. Switches (each with its hosts) go, heaviest first, to the server with the least load so far,
   where a switch and each host count one unit of CPU (each is one busy process); among equally
   loaded servers, the one holding most of the switch's neighbours wins (fewer tunnels), then
   the one listed first.
4. Then pairs of unpinned switches of equal load on different servers trade places while a
   trade lowers the number of switch links between servers (each one a tunnel): the greedy
   pass sees only the switches placed before each one (fattree:4 over two servers: 16 tunnels
   after it, 8 after the trades), and equal loads keep the balance as it was.

``describe`` says per server what it runs and why, and the run prints it.
"""

from __future__ import annotations

from control_plane.deploy.addressing import Addressing
from control_plane.model.topology import Topology
from emulation.cluster.spec import ClusterSpec


def place(topo: Topology, addr: Addressing, spec: ClusterSpec) -> dict[str, str]:
    """node -> server name for every node of ``topo``."""
    servers = list(spec.servers)
    hosts_of: dict[str, list[str]] = {sw: [] for sw in topo.switches}
    for host in topo.workers + topo.pss:
        hosts_of[addr.tor[host]].append(host)
    where: dict[str, str] = {}
    load = dict.fromkeys(servers, 0)
    for sw in topo.switches:
        if sw in spec.placement:
            where[sw] = spec.placement[sw]
            load[where[sw]] += 1 + len(hosts_of[sw])
    free = sorted((sw for sw in topo.switches if sw not in where),
                  key=lambda sw: (-len(hosts_of[sw]), topo.switches.index(sw)))
    graph = topo.graph
    for sw in free:
        def rank(server: str, sw: str = sw) -> tuple[int, int, int]:
            near = sum(1 for nb in graph[sw] if where.get(nb) == server)
            return (load[server], -near, servers.index(server))
        where[sw] = min(servers, key=rank)
        load[where[sw]] += 1 + len(hosts_of[sw])
    trade(topo, where, {sw: 1 + len(hosts_of[sw]) for sw in free})
    for host in topo.workers + topo.pss:
        where[host] = spec.placement.get(host, where[addr.tor[host]])
    return where


def trade(topo: Topology, where: dict[str, str], weight: dict[str, int]) -> None:
    """Swap the servers of two switches of ``weight`` (equal weights only) while a swap
    lowers the count of switch links between servers; the best swap first."""
    switches = set(topo.switches)
    near = {sw: [n for n in topo.graph[sw] if n in switches] for sw in weight}

    def gain(u: str, v: str) -> int:
        """Links between servers that swapping ``u`` and ``v`` removes (negative: adds)."""
        su, sv = where[u], where[v]
        g = 0
        for x, own, other in ((u, su, sv), (v, sv, su)):
            for n in near[x]:
                if n in (u, v):
                    continue
                g += (where[n] == other) - (where[n] == own)
        return g

    while True:
        pairs = [(gain(u, v), u, v) for u in weight for v in weight
                 if u < v and weight[u] == weight[v] and where[u] != where[v]]
        best = max(pairs, default=None)
        if best is None or best[0] <= 0:
            return
        _, u, v = best
        where[u], where[v] = where[v], where[u]


def crossing(topo: Topology, where: dict[str, str]) -> list[tuple[str, str]]:
    """The links whose ends run on different servers (each once): the run's tunnels."""
    seen, out = set(), []
    for a, b in topo.links:
        if where[a] != where[b] and frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            out.append((a, b))
    return out


def describe(topo: Topology, where: dict[str, str], spec: ClusterSpec) -> list[str]:
    """One line per server: its switches and hosts (pinned ones marked)."""
    lines = []
    for server in spec.servers:
        nodes = [n for n in topo.switches + topo.workers + topo.pss if where[n] == server]
        named = [f"{n}*" if n in spec.placement else n for n in nodes]
        lines.append(f"  {server} ({spec.servers[server].address}): "
                     f"{' '.join(named) or 'nothing'}")
    lines.append("  (* pinned in the servers file; hosts run with their ToR switch, switches "
                 "balance one CPU unit per switch and per host)")
    return lines
