"""LBMM's lazy heap must route exactly as the full scan it replaced, and ATP with the faster
link loads exactly as before (the old code is kept here as the reference): same flows, same
paths, same rate."""

from collections import defaultdict

import pytest

from control_plane.model.plan import Flow, Plan
from control_plane.model.topologies import build_topology, fattree, fig1, leafspine
from control_plane.model.topology import Link, Topology
from control_plane.solver import baselines
from control_plane.solver.baselines import atp, equal_split, lbmm
from control_plane.solver.paths import PathSets, arcs


class ScanLoads:
    """The original link loads: spare capacities read from the topology at every arc."""

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


def dual_homed_fig1() -> Topology:
    """fig1 with PS s1 also linked to v1: its pairs' paths end on different arcs."""
    t = fig1()
    links = list(t.links.values()) + [Link("s1", "v1", 3.0), Link("v1", "s1", 3.0)]
    return Topology(list(t.nodes.values()), links, name="fig1-dual")


def scan_lbmm(topo: Topology, paths: PathSets) -> Plan:
    """The original LBMM: every step scans every pending pair (quadratic)."""
    split = equal_split(topo)
    loads = ScanLoads(topo)
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


TOPOLOGIES = [
    ("fig1", fig1),
    ("fattree:4", lambda: fattree(4, ps=2)),
    *[(f"fattree:6 {preset} seed {seed}",
       lambda preset=preset, seed=seed: fattree(6, ps=4, preset=preset, seed=seed))
      for preset in ("homogeneous", "heterogeneous") for seed in (0, 1)],
    *[(f"leafspine:{spec} seed {seed}",
       lambda spec=spec, seed=seed: build_topology(f"leafspine:{spec}", ps=2,
                                                   preset="heterogeneous", seed=seed))
      for spec in ("3,2,2", "4,2,3", "6,3,4") for seed in (0, 3)],
    ("leafspine:4,2,3 homogeneous", lambda: leafspine(4, 2, 3, ps=2)),
    *[(f"irregular:7,10 seed {seed}",
       lambda seed=seed: build_topology("irregular:7,10", ps=2, preset="heterogeneous",
                                        seed=seed)) for seed in (1, 3, 8)],
    ("fig1, s1 dual-homed", lambda: dual_homed_fig1()),
]


@pytest.mark.parametrize("build", [b for _, b in TOPOLOGIES], ids=[n for n, _ in TOPOLOGIES])
def test_lbmm_matches_full_scan(build):
    topo = build()
    new, old = lbmm(topo, PathSets(topo)), scan_lbmm(topo, PathSets(topo))
    assert new.flows == old.flows
    assert new.rate == old.rate


@pytest.mark.parametrize("build", [b for _, b in TOPOLOGIES], ids=[n for n, _ in TOPOLOGIES])
def test_atp_matches_original_loads(build, monkeypatch):
    topo = build()
    new = atp(topo, PathSets(topo))
    monkeypatch.setattr(baselines, "_LinkLoads", ScanLoads)
    old = atp(topo, PathSets(topo))
    assert new.flows == old.flows and new.meta == old.meta
    assert new.rate == old.rate


@pytest.mark.parametrize("build", [b for _, b in TOPOLOGIES], ids=[n for n, _ in TOPOLOGIES])
def test_atp_skips_only_target_rates_that_cannot_win(build, monkeypatch):
    topo = build()
    pruned = atp(topo, PathSets(topo))
    monkeypatch.setattr(baselines, "_atp_ceiling", lambda *_: float("inf"))
    every = atp(topo, PathSets(topo))
    assert pruned.flows == every.flows and pruned.meta == every.meta
    assert pruned.rate == every.rate


def test_atp_ceiling_bounds_the_plan_at_every_target():
    topo = fattree(4, ps=2, preset="heterogeneous", seed=1)
    paths = PathSets(topo)
    tor_of = {w: topo.tor(w) for w in topo.workers}
    uplink = min(topo.links[(w, t)].spare for w, t in tor_of.items())
    for rate in (0.5, 1.0, 2.0, 3.0, 4.5, 9.0, 18.0):
        plan = baselines._atp_at(topo, paths, rate)
        assert plan.evaluate().rate <= baselines._atp_ceiling(topo, rate, tor_of, uplink) + 1e-9
