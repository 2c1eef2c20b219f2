"""The simulation's traffic builders: RAT counted over all trees, routes, the engine's units."""

from __future__ import annotations

from collections import Counter

import networkx as nx
import pytest

from control_plane.model.topologies import build_topology, fig1
from host_stack.collectives.rat import build_trees, hierarchy
from simulation.engine import Network, Stage, Transfer, lower_bound, run_stages
from simulation.rat_traffic import stage_pairs
from simulation.routes import Router


@pytest.mark.parametrize("spec", ["fig1", "fattree:4", "fattree:6", "leafspine:4,2,5"])
def test_rat_pairs_count_the_trees_edges(spec) -> None:
    topo = build_topology(spec)
    h = hierarchy(topo.graph, topo.workers)
    expected = [Counter() for _ in range(max(len(t.stages) for t in build_trees(h)))]
    for tree in build_trees(h):
        for k, stage in enumerate(tree.stages):
            expected[k].update(stage)
    assert stage_pairs(h) == expected


def test_dst_routes_are_the_emulations_bfs_tree() -> None:
    """On fattree:4 every route to a host from another pod crosses the same core switch
    (the lowest id the BFS from that host reaches first); ECMP spreads them."""
    topo = build_topology("fattree:4")
    dst, ecmp = Router(topo, "dst"), Router(topo, "ecmp")
    target = topo.workers[0]
    cores = {n for n in topo.switches if n.startswith("c")}
    others = [w for w in topo.workers if nx.shortest_path_length(topo.graph, w, target) == 6]
    assert len({next(n for n in dst.path(w, target) if n in cores) for w in others}) == 1
    assert len({next(n for n in ecmp.path(w, target) if n in cores) for w in others}) > 1
    for w in others:
        assert len(ecmp.path(w, target)) == 7  # shortest: host, 5 switches, host
        assert ecmp.path(w, target) == ecmp.path(w, target)  # deterministic
    with pytest.raises(ValueError, match="routing"):
        Router(topo, "spray")


def test_fig1_routes() -> None:
    r = Router(fig1())
    assert r.path("w1", "w5") == ("w1", "v1", "v2", "w5")
    assert r.path("w1", "w2") == ("w1", "v1", "w2")


def test_engine_shares_max_min_and_honours_bounds() -> None:
    """Two flows on one 1 GB/s link, one bounded at 0.2 GB/s: it gets 0.2, the other 0.8;
    each stage in its own time unit gives the same seconds as the exact fluid model."""
    net = Network({("a", "b"): 1e9, ("b", "c"): 1e9})
    bounded = Stage("s", [Transfer(("a", "b"), 2e8, bound=2e8), Transfer(("a", "b", "c"), 8e8)])
    alone = Stage("t", [Transfer(("b", "c"), 5e9)])
    secs = run_stages(net, [bounded, alone])
    assert secs == pytest.approx([1.0, 5.0], rel=1e-3)
    assert lower_bound(net, bounded) == pytest.approx(1.0)


def test_engine_resources_constrain_like_links() -> None:
    net = Network({("a", "b"): 1e9}, {"ps:b": 2.5e8})
    secs = run_stages(net, [Stage("s", [Transfer(("a", "b"), 1e9, via=("ps:b",))])])
    assert secs == pytest.approx([4.0], rel=1e-3)


def test_a_resource_the_network_lacks_does_not_limit() -> None:
    net = Network({("a", "b"): 1e9})
    secs = run_stages(net, [Stage("s", [Transfer(("a", "b"), 1e9, via=("agg:b",))])])
    assert secs == pytest.approx([1.0], rel=1e-3)
