"""RAT trees are built for the ranks the processes join as: a job's plan order (w1, w2, ...,
w10), not the workers sorted by id string (w1, w10, w11, w12, w2, ...), which on a fat-tree of
10 or more workers would pair ranks in different racks at the trees' first stage."""

from __future__ import annotations

from types import SimpleNamespace

from control_plane.model.topologies import build_topology
from host_stack.collectives import scheme
from host_stack.collectives.rat import build_trees, hierarchy
from host_stack.collectives.schemes import prepare


def first_stage_pairs_share_a_rack(trees, workers, tor) -> bool:
    return all(tor[workers[c]] == tor[workers[p]] for t in trees for c, p in t.stages[0])


def test_prepare_builds_the_trees_for_the_given_rank_order() -> None:
    topo = build_topology("fattree:4")
    workers = topo.workers  # w1 .. w12, the plan's rank order
    tor = {w: next(iter(topo.graph[w])) for w in workers}
    cfg = prepare("tree", len(workers), topology=topo.graph, workers=workers)
    assert cfg.trees == build_trees(hierarchy(topo.graph, workers))
    assert first_stage_pairs_share_a_rack(cfg.trees, workers, tor)
    # what the workers built before: id-string order, placed on the plan's ranks
    default = prepare("tree", len(workers), topology=topo.graph)
    assert not first_stage_pairs_share_a_rack(default.trees, workers, tor)


def test_a_tree_worker_prepares_with_its_plans_worker_order(monkeypatch) -> None:
    topo = build_topology("fattree:4")
    seen = {}
    monkeypatch.setenv(scheme.INIT_ENV, "tcp://127.0.0.1:1")
    monkeypatch.setattr(scheme.dist, "init_process_group", lambda *a, **k: None)
    monkeypatch.setattr(scheme, "make_sync",
                        lambda *a, **k: seen.update(k) or SimpleNamespace(history=[]))
    plan = SimpleNamespace(worker_ids=list(topo.workers), topology=topo)
    ctx = SimpleNamespace(job=SimpleNamespace(plan=plan), rank=9,
                          args=SimpleNamespace(sync="tree", lr=0.1, momentum=0.9))
    scheme.build(ctx)
    assert seen["workers"] == topo.workers and seen["topology"] is topo.graph
