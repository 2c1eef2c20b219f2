"""The RAT tree rank by rank (simulation/ranks.py): a rank starts its next stage once its own
transfers are done, a transfer starts once both ends have posted (gloo's rendezvous), and a
send is done once its receiver has posted (the data may still be on the wire)."""

from __future__ import annotations

import pytest

from control_plane.model.topologies import build_topology
from simulation.collectives import tree_stages
from simulation.engine import Network, Stage, Transfer, run_stages
from simulation.ranks import run_ranks
from simulation.run import network, simulate

BPS = 1e6  # bytes/s on every link below
SIZE = 1e6


def star(*hosts: str) -> Network:
    """Every host joined to one switch x, both directions at BPS."""
    return Network({**{(h, "x"): BPS for h in hosts}, **{("x", h): BPS for h in hosts}})


def test_a_rank_goes_on_without_waiting_for_the_others() -> None:
    """Pair a-b moves 4x the bytes of pair c-d in stage 0; c and d run stage 1 while a and b
    are still in stage 0 (in lockstep, stage 1 would wait for a-b)."""
    net = star("a", "b", "c", "d")
    stages = [Stage("s0", [Transfer(("a", "x", "b"), 4 * SIZE), Transfer(("c", "x", "d"), SIZE)]),
              Stage("s1", [Transfer(("d", "x", "c"), SIZE)])]
    ends = run_ranks(net, stages)
    assert ends == pytest.approx([4.0, 2.0], rel=1e-2)
    assert sum(run_stages(net, stages)) == pytest.approx(5.0, rel=1e-2)


def test_a_transfer_waits_for_its_receiver_to_post() -> None:
    """c has nothing in stage 0, but b posts its stage-1 receive only after its stage-0 one
    is in: c's send starts then."""
    net = star("a", "b", "c")
    stages = [Stage("s0", [Transfer(("a", "x", "b"), 2 * SIZE)]),
              Stage("s1", [Transfer(("c", "x", "b"), SIZE)])]
    assert run_ranks(net, stages) == pytest.approx([2.0, 3.0], rel=1e-2)


def test_a_send_is_done_once_its_receiver_has_posted() -> None:
    """a's stage-0 send to b is done as soon as b posted (gloo wrote it to the socket), so
    a's stage-1 send to c shares a's link with it: both are in at 2 s."""
    net = star("a", "b", "c")
    stages = [Stage("s0", [Transfer(("a", "x", "b"), SIZE)]),
              Stage("s1", [Transfer(("a", "x", "c"), SIZE)])]
    assert run_ranks(net, stages) == pytest.approx([2.0, 2.0], rel=1e-2)


@pytest.mark.parametrize("spec, routing", [("fig1", "dst"), ("fattree:4", "dst"),
                                           ("fattree:6", "ecmp")])
def test_tree_ranks_finish_no_later_than_the_lockstep_model(spec, routing) -> None:
    topo = build_topology(spec)
    stages = tree_stages(topo, topo.workers, 104488, routing)
    net = network(topo, 1e6)
    lockstep = sum(run_stages(net, stages))
    res = simulate(topo, "tree", model_bytes=104488, scale_mbps=1.0, latency_us=0,
                   routing=routing)
    assert res.comm_time_s <= lockstep * (1 + 1e-3)
    if spec == "fig1":  # the racks' stages overlap: w3, w4 go on while w1, w2 still receive
        assert res.comm_time_s < 0.85 * lockstep
    assert res.stages[-1]["end_s"] == pytest.approx(res.comm_time_s)
