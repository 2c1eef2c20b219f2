"""The network as the service sees it: the registered topology plus what events changed.

Events never edit the registered topology: they set *modifiers* (links down, background loads,
lost switches) that are kept and persisted on their own, so a link coming back up restores
exactly what was registered.  A job is planned on ``job_topology``: the registered topology
with the modifiers applied, cut down to the job's hosts and the switches they can reach.  A
failure that cuts some of a job's workers or PSs off leaves them out (the job is degraded and
they rejoin when the failure heals); the side of a partition with the most worker-PS pairs
goes on training.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from control_plane.deploy.addressing import Addressing, assign
from control_plane.model.topology import Link, Node, Topology, natural_key
from control_plane.quote import quote


class NetworkError(ValueError):
    """An event or job that does not fit the network; ``field`` names the request field and
    ``not_found`` says whether it names something that does not exist."""

    def __init__(self, field_name: str, message: str, not_found: bool = False) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.not_found = not_found


class NoPlanError(RuntimeError):
    """No plan is possible for a job on the network as it is now."""


@dataclass(frozen=True)
class SwitchInfo:
    """Where one switch serves P4Runtime."""

    name: str
    address: str
    device_id: int


@dataclass
class Modifiers:
    """What events changed, on top of the registered topology."""

    down: set[frozenset[str]] = field(default_factory=set)  # physical links down
    link_load: dict[frozenset[str], float] = field(default_factory=dict)  # background, each way
    ps_load: dict[str, float] = field(default_factory=dict)  # PS background
    lost: set[str] = field(default_factory=set)  # switches reported lost

    def to_dict(self) -> dict[str, Any]:
        return {"down": sorted(sorted(k) for k in self.down),
                "link_load": [[*sorted(k), v] for k, v in sorted(self.link_load.items(),
                                                                 key=lambda kv: sorted(kv[0]))],
                "ps_load": dict(sorted(self.ps_load.items())), "lost": sorted(self.lost)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Modifiers:
        return cls(down={frozenset(k) for k in data.get("down", [])},
                   link_load={frozenset((a, b)): float(v) for a, b, v in data.get("link_load", [])},
                   ps_load={k: float(v) for k, v in data.get("ps_load", {}).items()},
                   lost=set(data.get("lost", [])))


class Network:
    """A registered topology, its switches' addresses and the modifiers events set."""

    def __init__(self, topology: Topology, switches: dict[str, SwitchInfo],
                 modifiers: Modifiers | None = None) -> None:
        self.topology = topology
        self.addressing: Addressing = assign(topology)
        self.switches = switches
        self.mod = modifiers or Modifiers()

    # -- lookups that name the request field on failure ------------------------------------
    def link(self, a: str, b: str, where: str) -> frozenset[str]:
        for end, name in ((a, "a"), (b, "b")):
            if end not in self.topology.nodes:
                raise NetworkError(f"{where}.{name}", f"unknown node {quote(end)}", not_found=True)
        if (a, b) not in self.topology.links:
            raise NetworkError(where, f"no link {a} <-> {b} in the topology", not_found=True)
        return frozenset((a, b))

    def node(self, name: str, kind: str, where: str) -> str:
        node = self.topology.nodes.get(name)
        if node is None:
            raise NetworkError(where, f"unknown node {quote(name)}", not_found=True)
        if node.kind != kind:
            raise NetworkError(where, f"{quote(name)} is a {node.kind}, expected a {kind}")
        return name

    # -- events ------------------------------------------------------------------------------
    def set_link_down(self, link: frozenset[str], down: bool) -> None:
        (self.mod.down.add if down else self.mod.down.discard)(link)

    def set_link_load(self, link: frozenset[str], value: float, where: str) -> None:
        a, b = sorted(link)
        cap = min(self.topology.links[(a, b)].capacity, self.topology.links[(b, a)].capacity)
        _check_load(value, cap, where, f"link {a} <-> {b}")
        self.mod.link_load[link] = value

    def set_ps_load(self, ps: str, value: float, where: str) -> None:
        _check_load(value, self.topology.nodes[ps].capacity or 0.0, where, f"PS {ps}")
        self.mod.ps_load[ps] = value

    def set_switch_lost(self, switch: str, lost: bool) -> None:
        (self.mod.lost.add if lost else self.mod.lost.discard)(switch)

    # -- views -------------------------------------------------------------------------------
    def up_graph(self) -> nx.Graph:
        """Physical links that are up, between nodes that are not lost."""
        g = nx.Graph()
        g.add_nodes_from(n for n in self.topology.nodes if n not in self.mod.lost)
        g.add_edges_from((a, b) for (a, b) in self.topology.links
                         if frozenset((a, b)) not in self.mod.down
                         and a not in self.mod.lost and b not in self.mod.lost)
        return g

    def current(self) -> dict[str, Any]:
        """The topology object with the modifiers applied (down links and lost switches left
        out); it may be partitioned, so it is a plain object, not a validated Topology."""
        data = self.topology.to_dict()
        data["nodes"] = [dict(n, background=self.mod.ps_load.get(n["id"], n.get("background")))
                         if n["kind"] == "ps" else n
                         for n in data["nodes"] if n["id"] not in self.mod.lost]
        up = self.up_graph()
        data["links"] = [dict(lk, background=self.mod.link_load.get(frozenset((lk["src"],
                                                                               lk["dst"])),
                                                                    lk["background"]))
                         for lk in data["links"] if up.has_edge(lk["src"], lk["dst"])]
        return data

    def job_topology(self, workers: list[str], pss: list[str]) -> tuple[Topology, list[str]]:
        """The topology to plan a job on now, and the job's hosts it leaves out (cut off).

        Raises NoPlanError when no switch-connected part holds a worker and a PS."""
        up = self.up_graph()
        fabric = up.subgraph(self.topology.switches).copy()
        part = {sw: i for i, comp in enumerate(nx.connected_components(fabric)) for sw in comp}
        members: dict[int, tuple[list[str], list[str]]] = {}
        for host in workers + pss:
            tor = self.addressing.tor[host]
            if host in up and up.has_edge(host, tor):
                side = members.setdefault(part[tor], ([], []))
                side[0 if host in workers else 1].append(host)
        best = max(members.items(), key=lambda kv: (len(kv[1][0]) * len(kv[1][1]),
                                                    len(kv[1][0]), -kv[0]), default=None)
        if best is None or not best[1][0] or not best[1][1]:
            raise NoPlanError("no worker can reach a PS of the job: every path between them is "
                              "down")
        keep_w, keep_s = best[1]
        switches = [sw for sw, p in part.items() if p == best[0]]
        keep = set(keep_w) | set(keep_s) | set(switches)
        nodes = [self._node(n) for n in sorted(keep, key=natural_key)]
        links = [self._link(a, b) for (a, b) in self.topology.links
                 if a in keep and b in keep and up.has_edge(a, b)]
        left_out = [h for h in workers + pss if h not in keep]
        return Topology(nodes, links, name=self.topology.name), left_out

    def _node(self, name: str) -> Node:
        node = self.topology.nodes[name]
        if node.kind == "ps" and name in self.mod.ps_load:
            return Node(node.id, node.kind, node.capacity, self.mod.ps_load[name])
        return node

    def _link(self, a: str, b: str) -> Link:
        link = self.topology.links[(a, b)]
        load = self.mod.link_load.get(frozenset((a, b)))
        return link if load is None else Link(a, b, link.capacity, load)


def _check_load(value: float, capacity: float, where: str, what: str) -> None:
    if not math.isfinite(value) or value < 0:
        raise NetworkError(where, f"{quote(value)} is not a finite number >= 0")
    if value > capacity:
        raise NetworkError(where, f"{value} exceeds the capacity {capacity} of {what}")
