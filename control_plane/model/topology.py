"""The cluster model G = (W, S, V, E) of DESIGN.md section 2, validated on construction.

Nodes are workers, parameter servers (capacity = ingress bandwidth B(s)) and programmable
switches (capacity = aggregation capacity C(v)); each carries a background load.  Links are
full duplex with a capacity and background per direction, so they are stored as directed arcs.
Every error names the bad item, because topologies are often written by hand.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import networkx as nx

from control_plane.quote import quote
from control_plane.yamlfile import read_yaml

NODE_KINDS = ("worker", "ps", "switch")
# the fields a topology file may give (anything else is a typo, e.g. 'bandwidth')
TOP_FIELDS = ("name", "nodes", "links")
NODE_FIELDS = ("id", "kind", "capacity", "background")
LINK_FIELDS = ("src", "dst", "capacity", "background")


class TopologyError(ValueError):
    """A topology that is malformed or cannot carry a training job."""


@dataclass(frozen=True)
class Node:
    """A worker, PS or switch; capacity/background are None for workers."""

    id: str
    kind: str
    capacity: float | None = None
    background: float = 0.0

    @property
    def spare(self) -> float:
        """Capacity left for our job: C(v) - c(v) or B(s) - b(s)."""
        return (self.capacity or 0.0) - self.background


@dataclass(frozen=True)
class Link:
    """One direction of a full-duplex link."""

    src: str
    dst: str
    capacity: float
    background: float = 0.0

    @property
    def spare(self) -> float:
        """B(e) - b(e)."""
        return self.capacity - self.background


def _number(value: Any, where: str, field: str, required: bool = True) -> float | None:
    """Parse a non-negative finite number, naming the item and field in errors."""
    if value is None:
        if required:
            raise TopologyError(f"{where}: missing '{field}' (expected a number >= 0)")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TopologyError(f"{where}: '{field}'={quote(value)} is not a finite number")
    if value < 0:
        raise TopologyError(f"{where}: '{field}'={value} is negative (expected >= 0)")
    return float(value)


def _known_fields(item: dict, allowed: tuple[str, ...], where: str) -> None:
    """A TopologyError naming the first field not in ``allowed`` (a typo is never ignored)."""
    unknown = [str(k) for k in item if k not in allowed]
    if unknown:
        raise TopologyError(f"{where}: unknown field {quote(unknown[0])} (expected "
                            f"{', '.join(allowed)})")


class Topology:
    """Nodes and directed links of a cluster; immutable after construction."""

    def __init__(self, nodes: list[Node], links: list[Link], name: str = "custom") -> None:
        self.name = name
        self.nodes: dict[str, Node] = {}
        for node in nodes:
            if node.id in self.nodes:
                raise TopologyError(f"node {quote(node.id)}: duplicate id")
            self.nodes[node.id] = node
        self.links: dict[tuple[str, str], Link] = {}
        for link in links:
            key = (link.src, link.dst)
            where = f"link {quote(link.src, bare=True)}->{quote(link.dst, bare=True)}"
            for end in key:
                if end not in self.nodes:
                    raise TopologyError(f"{where}: node {quote(end)} does not exist")
            if link.src == link.dst:
                raise TopologyError(f"{where}: a link needs two ends")
            if key in self.links:
                raise TopologyError(f"{where}: duplicate link")
            self.links[key] = link
        self._validate()

    # -- views -------------------------------------------------------------------------------
    def ids(self, kind: str) -> list[str]:
        """Ids of one node kind, in a stable (natural) order (a fresh list: callers may
        change it).  Sorted once: solvers ask for them inside per-worker loops, and sorting
        fattree:32's 10k nodes each time made building one take minutes."""
        return list(self._sorted_ids.get(kind, ()))

    @cached_property
    def _sorted_ids(self) -> dict[str, tuple[str, ...]]:
        by_kind: dict[str, list[str]] = {}
        for n in self.nodes.values():
            by_kind.setdefault(n.kind, []).append(n.id)
        return {kind: tuple(sorted(ids, key=natural_key)) for kind, ids in by_kind.items()}

    @property
    def workers(self) -> list[str]:
        return self.ids("worker")

    @property
    def pss(self) -> list[str]:
        return self.ids("ps")

    @property
    def switches(self) -> list[str]:
        return self.ids("switch")

    @cached_property
    def digraph(self) -> nx.DiGraph:
        """Directed graph of the arcs, with node attribute 'kind' and arc 'capacity'."""
        g = nx.DiGraph()
        for node in self.nodes.values():
            g.add_node(node.id, kind=node.kind)
        for link in self.links.values():
            g.add_edge(link.src, link.dst, capacity=link.capacity, background=link.background)
        return g

    @cached_property
    def graph(self) -> nx.Graph:
        """Undirected view (physical links) with node attribute 'kind'."""
        return self.digraph.to_undirected(as_view=False)

    def tor(self, host: str) -> str:
        """The first switch a host is attached to (its ToR), by natural id order."""
        switches = sorted((n for n in self.graph[host] if self.nodes[n].kind == "switch"),
                          key=natural_key)
        if not switches:
            raise TopologyError(f"node {quote(host)}: not attached to any switch")
        return switches[0]

    # -- validation --------------------------------------------------------------------------
    def _validate(self) -> None:
        for node in self.nodes.values():
            where = f"node {quote(node.id)}"
            if node.kind not in NODE_KINDS:
                raise TopologyError(f"{where}: unknown kind {quote(node.kind)} (expected "
                                    f"{NODE_KINDS})")
            if node.kind != "worker" and node.capacity is None:
                raise TopologyError(f"{where}: missing 'capacity' (expected a number >= 0)")
        if not self.workers:
            raise TopologyError("topology: no node of kind 'worker'")
        if not self.pss:
            raise TopologyError("topology: no node of kind 'ps'")
        # workers and PSs talk through switches only: hosts are never transit nodes; one
        # search from and one to each PS (not one per worker: fattree:32 has 8k workers)
        from_ps = {s: _reachable_via_switches(self, s) for s in self.pss}
        to_ps = {s: _reachable_via_switches(self, s, reverse=True) for s in self.pss}
        for w in self.workers:
            for s in self.pss:
                if w not in to_ps[s]:
                    raise TopologyError(
                        f"worker {quote(w)} cannot reach PS {quote(s)} through switches "
                        f"(check links)"
                    )
                if w not in from_ps[s]:
                    raise TopologyError(
                        f"PS {quote(s)} cannot reach worker {quote(w)} through switches "
                        f"(results path)"
                    )

    # -- serialisation -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The `topology` object of the plan JSON: nodes and both directions of every link."""
        nodes = []
        for node in sorted(self.nodes.values(), key=lambda n: (NODE_KINDS.index(n.kind),
                                                                natural_key(n.id))):
            item: dict[str, Any] = {"id": node.id, "kind": node.kind}
            if node.kind != "worker":
                item["capacity"] = node.capacity
                item["background"] = node.background
            nodes.append(item)
        links = [{"src": lk.src, "dst": lk.dst, "capacity": lk.capacity,
                  "background": lk.background}
                 for lk in sorted(self.links.values(),
                                  key=lambda lk: (natural_key(lk.src), natural_key(lk.dst)))]
        return {"name": self.name, "nodes": nodes, "links": links}

    @classmethod
    def from_dict(cls, data: dict[str, Any], name: str | None = None) -> Topology:
        """Parse a topology object; a link given in one direction only is made full duplex."""
        if not isinstance(data, dict):
            raise TopologyError("topology: expected an object with 'nodes' and 'links'")
        _known_fields(data, TOP_FIELDS, "topology")
        for key in ("nodes", "links"):
            if not isinstance(data.get(key), list):
                raise TopologyError(f"topology: '{key}' must be a list")
        nodes = []
        first: dict[str, int] = {}  # node id -> its index in 'nodes'
        for i, item in enumerate(data["nodes"]):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
                raise TopologyError(f"nodes[{i}]: expected an object with a string 'id'")
            where = f"node {quote(item['id'])}"
            if item["id"] in first:
                raise TopologyError(f"nodes[{i}]: duplicate id {quote(item['id'])} (nodes"
                                    f"[{first[item['id']]}] has it already; expected unique ids)")
            first[item["id"]] = i
            _known_fields(item, NODE_FIELDS, where)
            kind = item.get("kind")
            if kind not in NODE_KINDS:
                raise TopologyError(f"{where}: unknown kind {quote(kind)} (expected {NODE_KINDS})")
            cap = _number(item.get("capacity"), where, "capacity", required=kind != "worker")
            bg = _number(item.get("background", 0), where, "background")
            if cap is not None and bg is not None and bg > cap:
                raise TopologyError(f"{where}: background {bg} exceeds capacity {cap}")
            nodes.append(Node(item["id"], kind, cap, bg or 0.0))
        given: dict[tuple[str, str], Link] = {}
        for i, item in enumerate(data["links"]):
            if not isinstance(item, dict):
                raise TopologyError(f"links[{i}]: expected an object")
            src, dst = item.get("src"), item.get("dst")
            if not isinstance(src, str) or not isinstance(dst, str):
                raise TopologyError(f"links[{i}]: 'src' and 'dst' must be node ids")
            where = f"link {quote(src, bare=True)}->{quote(dst, bare=True)}"
            _known_fields(item, LINK_FIELDS, where)
            cap = _number(item.get("capacity"), where, "capacity")
            if cap == 0:
                raise TopologyError(f"{where}: 'capacity'=0 (expected > 0; a link that carries "
                                    f"nothing is no link: leave it out)")
            bg = _number(item.get("background", 0), where, "background")
            if bg > cap:
                raise TopologyError(f"{where}: background {bg} exceeds capacity {cap}")
            if (src, dst) in given:
                raise TopologyError(f"{where}: duplicate link")
            given[(src, dst)] = Link(src, dst, cap, bg)
        links = list(given.values())
        links += [Link(lk.dst, lk.src, lk.capacity, lk.background)
                  for (src, dst), lk in given.items() if (dst, src) not in given]
        return cls(nodes, links, name or str(data.get("name", "custom")))

    @classmethod
    def load(cls, path: str | Path) -> Topology:
        """Read a topology from a JSON or YAML file written by hand."""
        path = Path(path)
        if path.suffix in (".yaml", ".yml"):
            data = read_yaml(path, "topology file", TopologyError)
        else:
            try:
                data = json.loads(path.read_text())
            except OSError as exc:
                raise TopologyError(f"topology file {path}: cannot read it ({exc.strerror})"
                                    ) from None
            except json.JSONDecodeError as exc:
                raise TopologyError(f"{path}: not valid JSON ({exc})") from None
        if isinstance(data, dict) and "topology" in data and "nodes" not in data:
            data = data["topology"]  # accept a plan file too
        try:
            return cls.from_dict(data, name=path.stem)
        except TopologyError as exc:
            raise TopologyError(f"{path}: {exc}") from None

    def save(self, path: str | Path) -> None:
        """Write as JSON, or YAML when the suffix says so."""
        path = Path(path)
        if path.suffix in (".yaml", ".yml"):
            import yaml

            path.write_text(yaml.safe_dump(self.to_dict(), sort_keys=False))
        else:
            path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")


def _reachable_via_switches(topo: Topology, src: str, reverse: bool = False) -> set[str]:
    """Nodes reachable from src along arcs whose intermediate nodes are all switches
    (`reverse`: the nodes src is reachable from, the same way)."""
    seen = {src}
    stack = [src]
    step = topo.digraph.predecessors if reverse else topo.digraph.successors
    while stack:
        u = stack.pop()
        if u != src and topo.nodes[u].kind != "switch":
            continue
        for b in step(u):
            if b not in seen:
                seen.add(b)
                stack.append(b)
    return seen


def natural_key(node_id: str) -> tuple:
    """Sort 'w2' before 'w10'."""
    parts: list[Any] = []
    num = ""
    text = ""
    for ch in node_id:
        if ch.isdigit():
            if text:
                parts.append(text)
                text = ""
            num += ch
        else:
            if num:
                parts.append(int(num))
                num = ""
            text += ch
    parts.append(int(num) if num else text)
    return tuple((0, p) if isinstance(p, int) else (1, p) for p in parts)
