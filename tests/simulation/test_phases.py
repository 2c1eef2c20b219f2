"""The tree rank by rank in phases (simulation/phases.py): stages that split the ranks into
groups sharing no link run group by group, those that join them run together, each rank
starting a phase when it was done with the last one, its sends still on the wire carried
over.  Against one run of every rank the collective's time is within PHASES_ERROR."""

from __future__ import annotations

import pytest

from control_plane.model.topologies import build_topology
from simulation import run as run_module
from simulation.collectives import tree_stages
from simulation.engine import Network, Stage, Transfer
from simulation.phases import groups, phases, run_phases
from simulation.profiles import BUILTIN
from simulation.ranks import run_ranks
from simulation.run import network, simulate, unit_bps

BPS = 1e6
SIZE = 1e6
# measured at fattree:8 to fattree:16: 0.8-1.7% short (docs/simulation.md)
PHASES_ERROR = 0.02


def _tree(spec: str) -> tuple[Network, list[Stage]]:
    topo = build_topology(spec)
    net = network(topo, unit_bps(topo, 100.0, None))
    return net, tree_stages(topo, topo.workers, BUILTIN["resnet50"].model_bytes)


def test_a_fat_trees_tree_runs_its_pods_apart_and_its_root_stages_together() -> None:
    _, stages = _tree("fattree:4")
    assert phases(stages) == [[0, 1], [2, 3], [4, 5]]
    assert [len(groups([stages[k] for k in ks])) for ks in phases(stages)] == [4, 1, 4]


def test_a_send_still_on_the_wire_shares_its_senders_link_in_the_next_phase() -> None:
    """Two racks, {a, b} on switch x and {c, d} on y.  Stage 0, apart: a->b (2 s alone),
    c->d (1 s).  Stage 1 joins them through x->y: a->d (2 s alone), b->c (0.5 s).  a is done
    with stage 0 at once (b posted), so its data to b is still on the wire when it sends to
    d (d posts at 1 s): they share a's link until a->b ends at 3 s, and a->d ends at 4 s.
    In phases the carried data does the same; without it a->d would end at 3 s.  (b is
    done at 2 s in phase one, at 3 s in one run of every rank: its data shared a's link.)"""
    hosts = {"a": "x", "b": "x", "c": "y", "d": "y"}
    links = {(h, s): BPS for h, s in hosts.items()} | {(s, h): BPS for h, s in hosts.items()}
    net = Network(links | {("x", "y"): 10 * BPS, ("y", "x"): 10 * BPS})
    stages = [Stage("s0", [Transfer(("a", "x", "b"), 2 * SIZE), Transfer(("c", "y", "d"), SIZE)]),
              Stage("s1", [Transfer(("a", "x", "y", "d"), 2 * SIZE),
                           Transfer(("b", "x", "y", "c"), SIZE / 2)])]
    assert phases(stages) == [[0], [1]]
    assert run_ranks(net, stages, 1e-6) == pytest.approx([3.0, 4.0], rel=1e-3)
    assert run_phases(net, stages, 1e-6) == pytest.approx([2.0, 4.0], rel=1e-3)


@pytest.mark.parametrize("spec", ["fig1", "fattree:8"])
def test_phases_keep_the_collectives_time_within_phases_error(spec) -> None:
    net, stages = _tree(spec)
    one_run = max(run_ranks(net, stages))
    assert max(run_phases(net, stages)) == pytest.approx(one_run, rel=PHASES_ERROR)


def test_simulate_runs_the_tree_in_phases_above_its_limit(monkeypatch) -> None:
    topo = build_topology("fattree:4")
    whole = simulate(topo, "tree", model_bytes=104488, link_gbps=10)
    monkeypatch.setattr(run_module, "TREE_PHASES_ABOVE", 0)
    phased = simulate(topo, "tree", model_bytes=104488, link_gbps=10)
    assert whole.note == "" and phased.note == "rank by rank in phases"
    assert phased.comm_time_s == pytest.approx(whole.comm_time_s, rel=0.1)
    assert phased.link_bytes == whole.link_bytes
