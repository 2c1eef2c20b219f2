"""Compile a plan into the P4Runtime entries of every switch (names of p4src/README.md).

Pure: plan + addressing in, per-switch entries out; control_plane/deploy/transaction.py writes
them (all or nothing).

Routes (``InaIngress.route_pair`` keyed on (src, dst), ``InaIngress.route_dst`` on dst /32):
- every host is reachable from every switch through ``route_dst``: the next hop is the first
  hop of a shortest switch-only path (ties broken by natural id order), so control packets,
  HELLO replies and late unicast RESULTs always have a route;
- a direct flow (w, s) gets pair entries along its plan path;
- an aggregated flow (w, s) at v gets pair entries along its plan path w..v, and the switch's
  aggregated stream gets (agg_addr(v), s) entries along the stream path v..s;
- the packets of an aggregated flow that v forwards unaggregated (RETX, collisions) continue
  with pair entries (w, s) along the stream path, or, if that path comes back through a switch
  of w..v (a (src, dst) key cannot take two directions on one switch), along the shortest path
  from v to s that avoids those switches (model/unaggregated.py, which the plan validator and
  the solver share); if none exists the plan is refused.

Aggregation (``InaIngress.ina_aggregate``): one entry per (job, s, w) aggregated at v. Every
(job, PS) pool on a switch gets a disjoint range of the INA_SLOTS slots: all pools have the same
size, the largest power of two with max-pools-per-switch x size <= INA_SLOTS, because the
workers pick ``slot = chunk mod pool size`` with one job-wide pool size (host --pool-size).

RESULT multicast: each PS's RESULTs go to the job's result address; they travel down a
shortest-path tree from the PS to all workers.  On every tree switch ``result_multicast``
maps (job, s, result address) to a group with one replica per tree child; ``result_rewrite``
turns a replica for a worker into a unicast to that worker and one for a child switch into a
copy still addressed to the result address (that switch replicates it again), so every tree
link carries each RESULT once.  Worker ranks are the natural id order (``ranks``); the host
stack gets them in the plan file it runs on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import networkx as nx

from control_plane.deploy.addressing import Addressing
from control_plane.model.plan import Plan
from control_plane.model.topology import Topology, natural_key
from control_plane.model.unaggregated import switch_bfs, unaggregated_tail

INA_SLOTS = 4096  # p4src/common/constants.p4; checked against build-info.json when present
MAX_RANKS = 64


class EntriesError(ValueError):
    """A plan the switches cannot express; the message names the flow, switch or field."""


@dataclass(frozen=True)
class Entry:
    """One table entry by P4Info names; ``why`` says which plan item it serves."""

    table: str
    match: tuple[tuple[str, object], ...]
    action: str
    params: tuple[tuple[str, object], ...]
    why: str

    def describe(self) -> str:
        m = ", ".join(f"{k}={v}" for k, v in self.match)
        p = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.table}[{m}] -> {self.action}({p}) ({self.why})"


@dataclass(frozen=True)
class Group:
    """A PRE multicast group: (egress port, replica id = egress_rid) pairs."""

    group_id: int
    replicas: tuple[tuple[int, int], ...]
    why: str


@dataclass
class SwitchEntries:
    """Everything one switch gets."""

    switch: str
    entries: list[Entry] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        """Entry count per table (short names) plus multicast groups."""
        out = Counter(e.table.split(".")[-1] for e in self.entries)
        out["multicast_groups"] = len(self.groups)
        return dict(out)


@dataclass
class Compiled:
    """The entries of every switch plus what the hosts must agree on."""

    switches: dict[str, SwitchEntries]
    ranks: dict[str, int]
    pool_size: int
    result_addr: str
    multicast_tree: dict[str, dict[str, list[str]]]  # PS -> switch -> children

    def total(self) -> int:
        return sum(len(s.entries) + len(s.groups) for s in self.switches.values())

    def summary_table(self) -> str:
        """Switch x table entry counts (and multicast groups) as aligned text."""
        summary = {sw: s.summary() for sw, s in self.switches.items()}
        cols = sorted({k for row in summary.values() for k in row})
        lines = [f"{'switch':8s}" + "".join(f"{c:>18s}" for c in cols)]
        for sw, row in summary.items():
            lines.append(f"{sw:8s}" + "".join(f"{row.get(c, 0):18d}" for c in cols))
        return "\n".join(lines)


def ranks(topology: Topology) -> dict[str, int]:
    """Bitmap rank of each worker: natural id order (w1, w2, ..., w10)."""
    workers = topology.workers
    if len(workers) > MAX_RANKS:
        raise EntriesError(f"{len(workers)} workers: the INA bitmap holds at most {MAX_RANKS}")
    return {w: i for i, w in enumerate(workers)}


def pool_size(pools_per_switch: int, slots: int = INA_SLOTS) -> int:
    """Largest power of two p with pools_per_switch * p <= slots (1 pool: all slots)."""
    if pools_per_switch < 1:
        return slots
    if pools_per_switch > slots:
        raise EntriesError(f"{pools_per_switch} aggregation pools on one switch: at most "
                           f"{slots} fit in its {slots} slots")
    size = 1
    while size * 2 * pools_per_switch <= slots:
        size *= 2
    return size


class _Builder:
    def __init__(self, plan: Plan, addr: Addressing, slots: int, slot_base: int = 0,
                 group_base: int = 0, rid_base: int = 0) -> None:
        self.plan = plan
        self.topo = plan.topology
        self.addr = addr
        self.slots = slots
        self.slot_base, self.group_base, self.rid_base = slot_base, group_base, rid_base
        self.graph = self.topo.graph  # the links routes may use
        self.switches = {sw: SwitchEntries(sw) for sw in self.topo.switches}
        self.keys: dict[tuple[str, str, tuple], Entry] = {}
        self.job = plan.job

    # -- helpers -------------------------------------------------------------------------------
    def _is_switch(self, node: str) -> bool:
        return self.topo.nodes[node].kind == "switch"

    def _host_ip(self, node: str) -> str:
        return self.addr.ip[node]

    def _add(self, switch: str, entry: Entry) -> None:
        key = (switch, entry.table, entry.match)
        old = self.keys.get(key)
        if old is not None:
            if (old.action, old.params) == (entry.action, entry.params):
                return
            raise EntriesError(f"switch '{switch}': conflicting entries for the same key: "
                               f"{old.describe()} vs {entry.describe()}")
        self.keys[key] = entry
        self.switches[switch].entries.append(entry)

    def _next_hop(self, switch: str, nxt: str, why: str) -> tuple[tuple[str, object], ...]:
        port = self.addr.port.get((switch, nxt))
        if port is None:
            raise EntriesError(f"{why}: switch '{switch}' has no link to '{nxt}'")
        return (("port", port), ("dst_mac", self.addr.mac[nxt]),
                ("src_mac", self.addr.mac[switch]))

    def _pair_route(self, path: tuple[str, ...], src_ip: str, dst_ip: str, why: str) -> None:
        """(src, dst) entries at every switch of ``path`` that has a next hop on it."""
        for here, nxt in zip(path, path[1:], strict=False):
            if not self._is_switch(here):
                continue
            self._add(here, Entry("InaIngress.route_pair",
                                  (("src_addr", src_ip), ("dst_addr", dst_ip)),
                                  "InaIngress.set_next_hop", self._next_hop(here, nxt, why), why))

    def _switch_bfs(self, root: str, avoid: frozenset[str] = frozenset()) -> dict[str, str]:
        """Parent pointers of a BFS from ``root`` through switches only (natural order)."""
        return switch_bfs(self.topo, root, avoid, self.graph)

    # -- routes --------------------------------------------------------------------------------
    def dst_routes(self) -> None:
        for host in self.topo.workers + self.topo.pss:
            parent = self._switch_bfs(host)  # parent[u] = next hop from u towards host
            for sw in self.topo.switches:
                if sw not in parent:
                    continue  # a switch that cannot reach this host needs no route to it
                why = f"route to {host}"
                self._add(sw, Entry("InaIngress.route_dst",
                                    (("dst_addr", f"{self._host_ip(host)}/32"),),
                                    "InaIngress.set_next_hop",
                                    self._next_hop(sw, parent[sw], why), why))

    def flow_routes(self) -> None:
        for flow in self.plan.flows:
            w, s, v = flow.worker, flow.ps, flow.aggregate_at
            why = f"flow {w}->{s}" + (f" via {v}" if v else "")
            if not flow.path or flow.path[0] != w:
                raise EntriesError(f"{why}: path {list(flow.path)} does not start at {w}")
            src, dst = self._host_ip(w), self._host_ip(s)
            if v is None:
                self._pair_route(flow.path, src, dst, why)
                continue
            if flow.path[-1] != v:
                raise EntriesError(f"{why}: path {list(flow.path)} does not end at {v}")
            self._pair_route(flow.path, src, dst, why)
            tail = self._unaggregated_tail(flow.path, v, s, why)
            self._pair_route(tail, src, dst, f"{why}, unaggregated")

    def _stream_path(self, v: str, s: str) -> tuple[str, ...]:
        path = self.plan.stream_path(v, s)
        if path:
            if path[0] != v or path[-1] != s:
                raise EntriesError(f"stream {v}->{s}: path {list(path)} does not run {v}..{s}")
            return path
        parent = self._switch_bfs(s)  # the plan gave none: shortest path
        if v not in parent:
            raise EntriesError(f"stream {v}->{s}: no path from {v} to {s}")
        out = [v]
        while out[-1] != s:
            out.append(parent[out[-1]])
        return tuple(out)

    def _unaggregated_tail(self, path: tuple[str, ...], v: str, s: str,
                           why: str) -> tuple[str, ...]:
        tail = unaggregated_tail(self.topo, path, s, (self._stream_path(v, s),), self.graph)
        if tail is None:
            raise EntriesError(f"{why}: its unaggregated packets cannot continue from {v} to "
                               f"{s} without revisiting a switch of {list(path)}")
        return tail

    def stream_routes(self) -> None:
        for st in self.plan.streams:
            path = self._stream_path(st.switch, st.ps)
            self._pair_route(path, self.addr.agg_addr[st.switch], self._host_ip(st.ps),
                             f"aggregated stream {st.switch}->{st.ps}")

    # -- aggregation -----------------------------------------------------------------------------
    def aggregation(self, rank: dict[str, int]) -> int:
        members: dict[tuple[str, str], list[str]] = {}
        for flow in self.plan.flows:
            if flow.aggregate_at is not None:
                members.setdefault((flow.aggregate_at, flow.ps), []).append(flow.worker)
        pools: dict[str, list[str]] = {}
        for (v, s) in sorted(members, key=lambda k: (natural_key(k[0]), natural_key(k[1]))):
            if not self._is_switch(v):
                raise EntriesError(f"flows to {s}: aggregate_at '{v}' is not a switch")
            pools.setdefault(v, []).append(s)
        size = pool_size(max((len(p) for p in pools.values()), default=1), self.slots)
        for v, pss in pools.items():
            for i, s in enumerate(pss):
                workers = sorted(members[(v, s)], key=natural_key)
                if len(set(workers)) != len(workers):
                    raise EntriesError(f"switch '{v}', PS '{s}': a worker is listed twice")
                for w in workers:
                    why = f"aggregate {w}->{s} at {v} (fan-in {len(workers)})"
                    self._add(v, Entry(
                        "InaIngress.ina_aggregate",
                        (("job", self.job), ("ps_addr", self._host_ip(s)),
                         ("worker_addr", self._host_ip(w))),
                        "InaIngress.aggregate",
                        (("pool_base", self.slot_base + i * size), ("pool_size", size),
                         ("fan_in", len(workers)), ("rank", rank[w]),
                         ("agg_addr", self.addr.agg_addr[v])), why))
        return size

    # -- RESULT multicast ------------------------------------------------------------------------
    def multicast(self, result_addr: str) -> dict[str, dict[str, list[str]]]:
        trees: dict[str, dict[str, list[str]]] = {}
        next_rid: Counter[str] = Counter()
        for g, s in enumerate(self.topo.pss, start=self.group_base + 1):
            parent = self._switch_bfs(s)
            children: dict[str, list[str]] = {}
            for w in self.topo.workers:
                if w not in parent:
                    raise EntriesError(f"RESULT tree of {s}: worker {w} is unreachable")
                node = w
                while parent[node] != s:
                    up = parent[node]
                    kids = children.setdefault(up, [])
                    if node in kids:
                        break
                    kids.append(node)
                    node = up
            trees[s] = children
            for sw, kids in sorted(children.items(), key=lambda kv: natural_key(kv[0])):
                replicas = []
                why = f"RESULT of {s} (group {g})"
                for kid in sorted(kids, key=natural_key):
                    next_rid[sw] += 1
                    rid = self.rid_base + next_rid[sw]
                    port = self.addr.port[(sw, kid)]
                    replicas.append((port, rid))
                    dst = result_addr if self._is_switch(kid) else self._host_ip(kid)
                    self._add(sw, Entry("InaEgress.result_rewrite", (("egress_rid", rid),),
                                        "InaEgress.rewrite_result",
                                        (("dst_addr", dst), ("dst_mac", self.addr.mac[kid]),
                                         ("src_mac", self.addr.mac[sw])),
                                        f"{why} to {kid}"))
                self.switches[sw].groups.append(Group(g, tuple(replicas), why))
                self._add(sw, Entry("InaIngress.result_multicast",
                                    (("job", self.job), ("ps_addr", self._host_ip(s)),
                                     ("dst_addr", result_addr)),
                                    "InaIngress.multicast", (("group", g),), why))
        return trees


def host_routes(topology: Topology, addressing: Addressing,
                up: nx.Graph | None = None) -> dict[str, SwitchEntries]:
    """The ``route_dst`` entries ``compile_plan`` writes for every worker and PS of
    ``topology``, over the links and switches of ``up`` (default: all of them).  They depend
    on the network only, so a controller that installs several plans side by side owns them
    once, and re-routes them when links fail (control_plane/deploy/versions.py); switches
    missing from ``up`` get nothing."""
    b = _Builder(Plan("routes", topology, {}, []), addressing, INA_SLOTS)
    if up is not None:
        b.graph = up
    b.dst_routes()
    return {sw: e for sw, e in b.switches.items() if sw in b.graph}


def compile_plan(plan: Plan, addressing: Addressing, slots: int = INA_SLOTS, slot_base: int = 0,
                 group_base: int = 0, rid_base: int = 0, with_host_routes: bool = True
                 ) -> Compiled:
    """Every switch's entries for ``plan``; raises EntriesError naming what cannot be expressed.

    ``slots`` aggregator slots from ``slot_base`` on, multicast groups after ``group_base`` and
    replica ids after ``rid_base`` are the plan's: plans installed side by side (several jobs,
    two versions of one job) get disjoint ranges; the defaults give a plan the whole switch.
    Without ``with_host_routes`` the ``route_dst`` entries are left out (``host_routes``
    makes them for a whole network).
    """
    topo = plan.topology
    missing = [n for n in topo.workers + topo.pss if n not in addressing.ip]
    missing += [n for n in topo.switches if n not in addressing.device_id]
    if missing:
        raise EntriesError(f"addressing has no entry for node(s) {', '.join(missing)}; it was "
                           f"made for another topology")
    if not 0 <= plan.job < 1 << 16:
        raise EntriesError(f"plan field 'job'={plan.job}: expected 0..65535")
    for flow in plan.flows:
        for node in (flow.worker, flow.ps, *flow.path):
            if node not in topo.nodes:
                raise EntriesError(f"flow {flow.worker}->{flow.ps}: unknown node '{node}'")
    if slot_base < 0 or slot_base + slots > INA_SLOTS:
        raise EntriesError(f"slots [{slot_base}, {slot_base + slots}): expected a range inside "
                           f"[0, {INA_SLOTS})")
    if group_base < 0 or group_base + len(topo.pss) >= 1 << 16:
        raise EntriesError(f"multicast groups after {group_base}: {len(topo.pss)} groups must "
                           f"fit in 1..65535")
    if rid_base < 0:
        raise EntriesError(f"replica ids after {rid_base}: expected a base >= 0")
    b = _Builder(plan, addressing, slots, slot_base, group_base, rid_base)
    rank = ranks(topo)
    if with_host_routes:
        b.dst_routes()
    b.flow_routes()
    b.stream_routes()
    size = b.aggregation(rank)
    result_addr = addressing.result_addr(plan.job)
    trees = b.multicast(result_addr)
    return Compiled(switches=b.switches, ranks=rank, pool_size=size, result_addr=result_addr,
                    multicast_tree=trees)
