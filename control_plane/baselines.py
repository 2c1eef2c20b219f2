"""The seed paper's baselines, exactly as it defines them (section 5.1.2 and Fig. 1).

- ATP: equal split; every worker's gradients are aggregated best-effort at its ToR switch
  (while the switch has capacity left at the target rate; the rest goes to the PS directly;
  PSs are served in order, so a ToR fills whole PS streams rather than fan-in-1 ones);
  the aggregated stream and the direct flows take the least-loaded path to the PS.
- LBMM: equal split, no INA; load-balanced min-min routing of every worker -> PS flow.
Least-loaded means the path whose busiest link, after adding the flow, is least utilised
(per unit rate, so the choice does not depend on the rate).
"""

from __future__ import annotations

from collections import defaultdict

from control_plane.paths import PathSets, arcs
from control_plane.plan import Flow, Plan
from control_plane.topology import Topology


def equal_split(topo: Topology) -> dict[str, float]:
    return {s: 1.0 / len(topo.pss) for s in topo.pss}


class _LinkLoads:
    """Per-unit-rate link loads for least-loaded path choices."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.load: dict[tuple[str, str], float] = defaultdict(float)

    def cost(self, path: tuple[str, ...], amount: float) -> tuple[float, int]:
        worst = 0.0
        for arc in arcs(path):
            spare = self.topo.links[arc].spare
            util = (self.load[arc] + amount) / spare if spare > 0 else float("inf")
            worst = max(worst, util)
        return worst, len(path)

    def best(self, options: tuple[tuple[str, ...], ...], amount: float) -> tuple[str, ...]:
        return min(options, key=lambda p: self.cost(p, amount))

    def add(self, path: tuple[str, ...], amount: float) -> None:
        for arc in arcs(path):
            self.load[arc] += amount


def lbmm(topo: Topology, paths: PathSets) -> Plan:
    """Load-balanced min-min: repeatedly route the flow whose best path is least loaded."""
    split = equal_split(topo)
    loads = _LinkLoads(topo)
    pending = [(w, s) for s in topo.pss for w in topo.workers]
    flows = []
    while pending:
        best_key, best_pair, best_path = None, None, None
        for pair in pending:
            w, s = pair
            path = loads.best(paths.get(w, s), split[s])
            key = loads.cost(path, split[s])
            if best_key is None or key < best_key:
                best_key, best_pair, best_path = key, pair, path
        pending.remove(best_pair)
        loads.add(best_path, split[best_pair[1]])
        flows.append(Flow(best_pair[0], best_pair[1], None, best_path))
    flows.sort(key=lambda f: (topo.pss.index(f.ps), topo.workers.index(f.worker)))
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


def atp(topo: Topology, paths: PathSets) -> Plan:
    """ATP at its best target rate: try every rate where a ToR's admission changes."""
    split = equal_split(topo)
    shares = sorted(set(split.values()))
    candidates = {0.0}
    flows_per_tor = defaultdict(int)
    for w in topo.workers:
        flows_per_tor[topo.tor(w)] += len(topo.pss)
    for v, n in flows_per_tor.items():
        for k in range(1, n + 1):
            for x in shares:
                candidates.add(topo.nodes[v].spare / (k * x))
    best = None
    for rate in sorted(candidates):
        plan = _atp_at(topo, paths, rate)
        plan.rate = plan.evaluate().rate
        if best is None or plan.rate > best.rate + 1e-12:
            best = plan
    assert best is not None
    return best.finalize()
