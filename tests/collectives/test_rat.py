"""RAT regions, trees, chain lengths and cross-region bytes (the paper's Table 1)."""

from __future__ import annotations

import networkx as nx
import pytest

from host_stack.collectives import rat
from tests.collectives.graphs import fattree, leafspine


@pytest.mark.parametrize("graph,layers,sizes", [
    (fattree(4), 2, [8, 4]),          # racks, pods, root
    (leafspine(4, 2, 3), 1, [4]),      # racks, root
    (leafspine(1, 2, 5), 0, []),       # one rack: degenerates to a PS
])
def test_levels_from_structure(graph: nx.Graph, layers: int, sizes: list[int]) -> None:
    h = rat.hierarchy(graph)
    assert h.l == layers
    assert [len(level) for level in h.levels] == sizes


def test_fig1_two_tors_linked_directly() -> None:
    g = nx.Graph()
    g.add_nodes_from(["v1", "v2"], kind="switch")
    g.add_edge("v1", "v2")
    for i in range(1, 7):
        g.add_node(f"w{i}", kind="worker")
        g.add_edge(f"w{i}", "v1" if i <= 4 else "v2")
    g.add_node("s1", kind="ps")
    g.add_edge("s1", "v2")
    h = rat.hierarchy(g)
    assert h.workers == tuple(f"w{i}" for i in range(1, 7))
    assert h.levels == ((frozenset({"w1", "w2", "w3", "w4"}), frozenset({"w5", "w6"})),)


@pytest.mark.parametrize("graph", [fattree(4), leafspine(4, 2, 3), leafspine(1, 1, 4)])
def test_chain_lengths_table1(graph: nx.Graph) -> None:
    h = rat.hierarchy(graph)
    trees = rat.build_trees(h)
    w = len(h.workers)
    assert len(trees) == w and sorted(t.root for t in trees) == list(range(w))
    assert {rat.chain_length(t) for t in trees} == {2 * (h.l + 1)}   # RAT 2(l+1)
    # ring's dependency chain 2(w-1) and PS's 2 are longer / shorter for these clusters
    assert 2 * (h.l + 1) <= 2 * (w - 1)


@pytest.mark.parametrize("graph", [fattree(4), leafspine(4, 2, 3)])
def test_cross_region_bytes_minimal(graph: nx.Graph) -> None:
    h = rat.hierarchy(graph)
    trees = rat.build_trees(h)
    w, data = len(h.workers), 1_000_000.0
    for level in range(h.l):
        regions = len(h.levels[level])
        per_tree = [rat.cross_region_bytes(rat.tree_transfers(t, data / w), h, level)
                    for t in trees]
        # each tree crosses every region boundary once up and once down: 2 slices
        assert per_tree == pytest.approx([2 * (regions - 1) * data / w] * w)
        total = sum(per_tree)
        ring = rat.cross_region_bytes(rat.ring_transfers(w, data), h, level)
        ps = rat.cross_region_bytes(rat.ps_transfers(w, data), h, level)
        assert total == pytest.approx(2 * (regions - 1) * data)
        assert total <= ring < ps


def test_aggregation_work_is_spread_over_trees() -> None:
    h = rat.hierarchy(fattree(4))
    trees = rat.build_trees(h)
    received = [0] * len(h.workers)
    for t in trees:
        for stage in t.stages:
            for _, parent in stage:
                received[parent] += 1
    assert len(set(received)) == 1, received  # symmetric cluster: every worker equally


def test_every_worker_reaches_the_root() -> None:
    h = rat.hierarchy(fattree(4))
    for t in rat.build_trees(h):
        parent = {c: p for s in t.stages for c, p in s}
        for w in range(len(h.workers)):
            seen = set()
            while w in parent:
                assert w not in seen
                seen.add(w)
                w = parent[w]
            assert w == t.root


def test_bad_topology_names_the_field() -> None:
    g = nx.Graph()
    g.add_node("x", kind="router")
    with pytest.raises(ValueError, match="node 'x'.*kind"):
        rat.hierarchy(g)
    g = leafspine(2, 1, 2)
    g.add_edge("h000", "l1")
    with pytest.raises(ValueError, match="h000.*exactly one ToR"):
        rat.hierarchy(g)
