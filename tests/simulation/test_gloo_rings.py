"""RSGCM rank by rank and message by message (simulation/gloo_rings.py) against hand
computations on one switch: gloo's ring all-reduce with its double buffer, its notices, one
TCP stream per connection, and ranks that go on to their next step on their own."""

from __future__ import annotations

import pytest

from control_plane.model.topologies import build_topology
from host_stack.collectives.p2p import (
    NOTICE_WIRE_BYTES,
    ack_wire_bytes,
    gloo_ring_iterations,
    message_wire_bytes,
)
from simulation.engine import Network
from simulation.gloo_rings import RingAllReduce, data_bytes, run_gloo_rings
from simulation.run import simulate

BPS = 1e6  # bytes/s on every link
SEG = 10_000  # bytes per segment below: 10,510 on the wire, 264 of ACKs, two notices
D = 11_002 / BPS  # one data message alone
N = NOTICE_WIRE_BYTES / BPS  # one notice frame on one link


def star(hosts: list[str]) -> tuple[Network, dict]:
    net = Network({**{(h, "x"): BPS for h in hosts}, **{("x", h): BPS for h in hosts}})
    paths = {(a, b): (a, "x", b) for a in hosts for b in hosts if a != b}
    return net, paths


def test_the_byte_model_of_one_message() -> None:
    assert message_wire_bytes(SEG) == 10_510 and ack_wire_bytes(SEG) == 264
    assert data_bytes(SEG) == 11_002 and NOTICE_WIRE_BYTES == 114


def test_two_ranks() -> None:
    """f = 2: 4 segments, 2 sends per phase each way.  A phase: both notices in after one
    frame on each of the two links (2N), then the two messages one after the other (2D)."""
    net, paths = star(["a", "b"])
    ends = run_gloo_rings(net, [RingAllReduce(0, ("a", "b"), 4 * SEG)], paths, 0.0, 0.0)
    assert ends == pytest.approx([2 * (2 * N + 2 * D)], rel=5e-3)


def test_latency_and_host_time_on_the_chain() -> None:
    """f = 2 with latency L a hop and host time O: a notice takes 2N + 2L and its sender
    O to react; a message's receiver wakes 2L + O after its data is through.  A phase:
    2N + 2L + O to the first message, 2D, 2L + O to wake up."""
    lat, o = 0.5e-3, 1e-3
    net, paths = star(["a", "b"])
    ends = run_gloo_rings(net, [RingAllReduce(0, ("a", "b"), 4 * SEG)], paths, lat, o)
    assert ends == pytest.approx([2 * (2 * N + 4 * lat + 2 * o + 2 * D)], rel=5e-3)


def test_three_ranks_messages_of_one_connection_take_turns() -> None:
    """f = 3: 6 segments, 4 sends per phase, each rank to the one before it.  From the third
    on, a send waits for the segment two before it to come in and for its own notice; with
    the connection's messages one after another the link never idles: 2N + 4D a phase.
    Were a connection's messages sharing the link, the first two would both end at
    2N + 2D and the phase would take longer."""
    hosts = ["a", "b", "c"]
    net, paths = star(hosts)
    ends = run_gloo_rings(net, [RingAllReduce(0, tuple(hosts), 6 * SEG)], paths, 0.0, 0.0)
    assert ends == pytest.approx([2 * (2 * N + 4 * D)], rel=5e-3)


def test_a_rank_starts_its_next_step_on_its_own() -> None:
    """a-b reduce 16 segments' worth (4 of 4 x SEG) in step 0 while c-d reduce 4 in each of
    two steps: c and d finish step 1 before a and b finish step 0."""
    net, paths = star(["a", "b", "c", "d"])
    rings = [RingAllReduce(0, ("a", "b"), 16 * SEG), RingAllReduce(0, ("c", "d"), 4 * SEG),
             RingAllReduce(1, ("c", "d"), 4 * SEG)]
    one = 2 * (2 * N + 2 * D)
    big = 2 * (2 * N + 2 * data_bytes(4 * SEG) / BPS)
    ends = run_gloo_rings(net, rings, paths, 0.0, 0.0)
    assert ends == pytest.approx([big, 2 * one], rel=5e-3)
    assert ends[1] < ends[0]


def test_rsgcm_link_bytes_follow_gloo_and_count_its_notices() -> None:
    """fig1's schedule: two ring all-reduces over all six workers; gloo sends to the rank
    before it, so w1 sends to w6 (across the racks) and receives from w2.  w1's link carries
    its data with their SEND_READY notices, the ACKs and RECV_READY notices of what it
    receives."""
    topo = build_topology("fig1")
    res = simulate(topo, "rsgcm", model_bytes=104488, scale_mbps=0.5, routing="dst")
    assert res.note == "schedule: mcts, message by message"
    up = 0.0
    for block in (52244, 52244):
        for send, recv in gloo_ring_iterations(block, 4, 6, 0):
            if send:
                up += message_wire_bytes(send) + NOTICE_WIRE_BYTES
            if recv:
                up += ack_wire_bytes(recv) + NOTICE_WIRE_BYTES
    assert res.link_bytes["w1->v1"] == pytest.approx(up)
    assert res.link_bytes["v1->v2"] > 0 and res.link_bytes["v2->v1"] > 0


def test_a_step_whose_blocks_are_empty_is_left_out() -> None:
    """A 4-byte gradient is one element: block 1 of fig1's two steps is empty, so only the
    step of block 0 runs."""
    res = simulate(build_topology("fig1"), "rsgcm", model_bytes=4, link_gbps=10)
    assert [row["stage"] for row in res.stages] == ["step0"]
    assert res.comm_time_s > 0
