"""The InArt paper's baselines, exactly as it defines them (section 5.1.2 and Fig. 1).

- ATP: equal split; every worker's gradients are aggregated best-effort at its ToR switch
  (while the switch has capacity left at the target rate; the rest goes to the PS directly;
  PSs are served in order, so a ToR fills whole PS streams rather than fan-in-1 ones);
  the aggregated stream and the direct flows take the least-loaded path to the PS.
- LBMM: equal split, no INA; load-balanced min-min routing of every worker -> PS flow.
Least-loaded means the path whose busiest link, after adding the flow, is least utilised
(per unit rate, so the choice does not depend on the rate).
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict

from control_plane.model.plan import Flow, Plan
from control_plane.model.topology import Topology
from control_plane.solver.paths import PathSets, arcs


def equal_split(topo: Topology) -> dict[str, float]:
    return {s: 1.0 / len(topo.pss) for s in topo.pss}


class _LinkLoads:
    """Per-unit-rate link loads for least-loaded path choices.  Loads, spare capacities and
    each path's arcs are kept in plain dicts: LBMM evaluates millions of path costs on
    fattree:16."""

    def __init__(self, topo: Topology) -> None:
        self.load = {arc: 0.0 for arc in topo.links}
        self.spare = {arc: link.spare for arc, link in topo.links.items()}
        self._arcs: dict[tuple[str, ...], list[tuple[str, str]]] = {}

    def arcs(self, path: tuple[str, ...]) -> list[tuple[str, str]]:
        found = self._arcs.get(path)
        if found is None:
            found = self._arcs[path] = arcs(path)
        return found

    def worst(self, links: list[tuple[str, str]], amount: float) -> float:
        """The highest utilisation among `links` with `amount` added to each."""
        worst = 0.0
        load, spare = self.load, self.spare
        for arc in links:
            room = spare[arc]
            util = (load[arc] + amount) / room if room > 0 else math.inf
            if util > worst:
                worst = util
        return worst

    def cost(self, path: tuple[str, ...], amount: float) -> tuple[float, int]:
        """(the busiest link's utilisation with `amount` added, hops): lower is better."""
        return self.worst(self.arcs(path), amount), len(path)

    def choice(self, options: tuple[tuple[str, ...], ...],
               amount: float) -> tuple[tuple[float, int], tuple[str, ...]]:
        """The least-loaded path (the first of equals) and its cost."""
        best_key, best = None, options[0]
        for path in options:
            key = self.cost(path, amount)
            if best_key is None or key < best_key:
                best_key, best = key, path
        assert best_key is not None
        return best_key, best

    def best(self, options: tuple[tuple[str, ...], ...], amount: float) -> tuple[str, ...]:
        return self.choice(options, amount)[1]

    def add(self, path: tuple[str, ...], amount: float) -> None:
        for arc in self.arcs(path):
            self.load[arc] += amount


class _Group:
    """LBMM's pending pairs of one PS whose paths all have `hops` hops and end on the same
    arc into the PS (`last`; None: no such arc).  Every such pair's cost is at least that
    arc's utilisation with the pair added, `floor()`: the same for the whole group.  Pairs
    whose known cost is at or under the floor wait in `clamped`, by pair index alone, so a
    rise of the floor (each pair routed to the PS) costs nothing; the others wait in `keyed`
    by (known cost, index)."""

    def __init__(self, last: tuple[str, str] | None, hops: int, amount: float) -> None:
        self.last, self.hops, self.amount = last, hops, amount
        self.keyed: list[tuple[tuple[float, int], int]] = []
        self.clamped: list[int] = []
        self.version = 0

    def floor(self, loads: _LinkLoads) -> tuple[float, int]:
        util = loads.worst([self.last], self.amount) if self.last is not None else -math.inf
        return util, self.hops

    def best(self, loads: _LinkLoads) -> tuple[tuple[float, int], int] | None:
        """The least (lower bound on cost, pair index) of the group, or None if empty."""
        floor = self.floor(loads)
        keyed, clamped = self.keyed, self.clamped
        while keyed and keyed[0][0] <= floor:
            heapq.heappush(clamped, heapq.heappop(keyed)[1])
        options = []
        if clamped:
            options.append((floor, clamped[0]))
        if keyed:
            options.append(keyed[0])
        return min(options) if options else None

    def take(self, entry: tuple[tuple[float, int], int]) -> None:
        """Remove `entry`, the group's `best()` just computed (a keyed entry is above the
        floor, so it never equals a clamped pair's)."""
        if self.keyed and self.keyed[0] == entry:
            heapq.heappop(self.keyed)
        else:
            heapq.heappop(self.clamped)


def lbmm(topo: Topology, paths: PathSets) -> Plan:
    """Load-balanced min-min: repeatedly route the flow whose best path is least loaded
    (ties: the first in PS-major, worker order).

    Loads only grow, so a pair's least cost only grows: a cost computed earlier is a lower
    bound, and the pair with the least (lower bound, index) whose bound is still its cost
    is the one a full scan would pick (a full scan per step is quadratic: hours on
    fattree:16).  Every path of a pair ends on its PS's downlink, which every pair routed
    to that PS loads: with one heap of pairs, each of those steps made every pair of the PS
    stale, to be popped and pushed again (pairs^2 / 8 pops: 134 M on fattree:32).  So the
    pairs are grouped by PS and hop count (`_Group`): the downlink's utilisation is a bound
    shared by the group, kept once, and a heap over the groups' least entries (few groups)
    finds the pair to check."""
    split = equal_split(topo)
    loads = _LinkLoads(topo)
    pairs = [(w, s) for s in topo.pss for w in topo.workers]
    options = [paths.get(w, s) for w, s in pairs]
    amount = [split[s] for _, s in pairs]
    groups: dict[tuple[str, int, tuple[str, str] | None], _Group] = {}
    group_of: list[_Group] = []
    for i, (_, s) in enumerate(pairs):
        lasts = {p[-2:] for p in options[i]}
        hops = {len(p) for p in options[i]}
        last = next(iter(lasts)) if len(lasts) == 1 and len(hops) == 1 else None
        key = (s, min(hops), last)
        if key not in groups:
            groups[key] = _Group(last, min(hops), amount[i])
        group_of.append(groups[key])
        heapq.heappush(groups[key].keyed, (loads.choice(options[i], amount[i])[0], i))
    order = list(groups.values())
    top: list[tuple[tuple[tuple[float, int], int], int, int]] = []  # (entry, group, version)

    def refresh(gi: int) -> None:
        group = order[gi]
        group.version += 1
        entry = group.best(loads)
        if entry is not None:
            heapq.heappush(top, (entry, gi, group.version))

    for gi in range(len(order)):
        refresh(gi)
    by_ps: dict[str, list[int]] = defaultdict(list)
    for gi, key in enumerate(groups):
        by_ps[key[0]].append(gi)
    routed: list[tuple[int, tuple[str, ...]]] = []
    while top:
        entry, gi, version = heapq.heappop(top)
        group = order[gi]
        if version != group.version:
            continue
        group.take(entry)
        i = entry[1]
        now, path = loads.choice(options[i], amount[i])
        if now != entry[0]:
            heapq.heappush(group.keyed, (now, i))
            refresh(gi)
            continue
        loads.add(path, amount[i])
        routed.append((i, path))
        for other in by_ps[pairs[i][1]]:  # the PS's downlink rose: their floors changed
            refresh(other)  # (the pair's own group among them)
    routed.sort()  # PS-major, worker order, as the pairs were listed
    flows = [Flow(pairs[i][0], pairs[i][1], None, path) for i, path in routed]
    return Plan("lbmm", topo, split, flows).finalize()


def _atp_at(topo: Topology, paths: PathSets, rate: float) -> Plan:
    """ATP's decisions when workers target `rate`: ToRs aggregate while capacity lasts."""
    split = equal_split(topo)
    room = {v: topo.nodes[v].spare for v in topo.switches}
    loads = _LinkLoads(topo)
    flows = []
    for s in topo.pss:  # PS-major: a ToR fills whole PS streams, not fan-in-1 streams
        for w in topo.workers:
            tor = topo.tor(w)
            need = rate * split[s]
            if room[tor] >= need - 1e-9:
                room[tor] -= need
                path = paths.get(w, tor)[0]
                flows.append(Flow(w, s, tor, path))
            else:
                path = loads.best(paths.get(w, s), split[s])
                flows.append(Flow(w, s, None, path))
            loads.add(path, split[s])
    stream_paths = {}
    for f in flows:
        key = f"{f.aggregate_at}->{f.ps}"
        if f.aggregate_at is not None and key not in stream_paths:
            path = loads.best(paths.get(f.aggregate_at, f.ps), split[f.ps])
            loads.add(path, split[f.ps])
            stream_paths[key] = list(path)
    return Plan("atp", topo, split, flows, meta={"stream_paths": stream_paths})


def _atp_ceiling(topo: Topology, rate: float, tor_of: dict[str, str],
                 uplink: float) -> float:
    """A rate ATP's plan at target `rate` cannot exceed, from its admissions alone (no
    routing): each PS receives its direct flows and one stream per ToR that aggregates for
    it, each ToR carries what it admitted, each worker's uplink its whole rate."""
    split = equal_split(topo)
    room = {v: topo.nodes[v].spare for v in set(tor_of.values())}
    direct: dict[str, int] = defaultdict(int)
    admitted: dict[str, int] = defaultdict(int)
    streams: set[tuple[str, str]] = set()
    for s in topo.pss:  # the admissions of _atp_at, in its order
        need = rate * split[s]
        for w in topo.workers:
            tor = tor_of[w]
            if room[tor] >= need - 1e-9:
                room[tor] -= need
                admitted[tor] += 1
                streams.add((s, tor))
            else:
                direct[s] += 1
    ceiling = uplink
    for s in topo.pss:
        units = split[s] * (direct[s] + sum(1 for (t, _) in streams if t == s))
        if units > 0:
            ceiling = min(ceiling, max(topo.nodes[s].spare, 0.0) / units)
    share = 1.0 / len(topo.pss)
    for v, n in admitted.items():
        ceiling = min(ceiling, max(topo.nodes[v].spare, 0.0) / (n * share))
    return ceiling


def atp(topo: Topology, paths: PathSets) -> Plan:
    """ATP at its best target rate: try every rate where a ToR's admission changes (in
    increasing order, the first best kept).  A rate whose admissions alone cap the plan at
    or under the best so far (`_atp_ceiling`) is not routed: the same plan, without routing
    most of fattree:32's 65 target rates (32k pairs each)."""
    split = equal_split(topo)
    shares = sorted(set(split.values()))
    candidates = {0.0}
    flows_per_tor = defaultdict(int)
    tor_of = {w: topo.tor(w) for w in topo.workers}
    for w in topo.workers:
        flows_per_tor[tor_of[w]] += len(topo.pss)
    for v, n in flows_per_tor.items():
        for k in range(1, n + 1):
            for x in shares:
                candidates.add(topo.nodes[v].spare / (k * x))
    uplink = min((topo.links[(w, t)].spare for w, t in tor_of.items()
                  if (w, t) in topo.links and len(topo.digraph.out_edges(w)) == 1),
                 default=math.inf)
    best = None
    for rate in sorted(candidates):
        if best is not None and _atp_ceiling(topo, rate, tor_of, uplink) <= best.rate + 1e-12:
            continue
        plan = _atp_at(topo, paths, rate)
        plan.rate = plan.evaluate().rate
        if best is None or plan.rate > best.rate + 1e-12:
            best = plan
    assert best is not None
    return best.finalize()
