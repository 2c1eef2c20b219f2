"""What each collective reports per round (bytes sent, communication time), counted at its
sends, against the closed forms: a ring or RAT-tree all-reduce of B bytes over W ranks sends
2(W-1)/W x B per rank on average (every segment or slice crosses each of W-1 hops twice)."""

from __future__ import annotations

import pytest
import torch

from host_stack.collectives.launch import run_processes
from host_stack.collectives.p2p import (
    NOTICE_WIRE_BYTES,
    ack_wire_bytes,
    gloo_ring_segments,
    message_wire_bytes,
    ring_bytes,
)
from host_stack.collectives.schemes import SchemeConfig, prepare
from host_stack.collectives.sync import make_sync

WORLD, NUMEL = 4, 1001  # not a multiple of 4: ring segments differ by one element


def _one_round(rank: int, world: int, device: torch.device, cfg: SchemeConfig
               ) -> tuple[int, float]:
    sync = make_sync(cfg, rank, world, lr=0.1)
    sync.step(0, torch.zeros(NUMEL), torch.full((NUMEL,), float(rank)))
    (stats,) = sync.history
    return stats.bytes, stats.comm_s


@pytest.mark.parametrize("scheme", ["ring", "tree", "torch"])
def test_ring_tree_and_torch_send_2_w_minus_1_over_w_of_the_gradient(scheme: str) -> None:
    sent = run_processes(_one_round, WORLD, args=(prepare(scheme, WORLD),), timeout_s=120)
    grad_bytes = NUMEL * 4
    assert sum(b for b, _ in sent) == 2 * (WORLD - 1) * grad_bytes
    assert all(b > 0 and comm_s > 0 for b, comm_s in sent)


def test_rsgcm_sends_what_its_schedule_of_rings_does() -> None:
    cfg = prepare("rsgcm", WORLD)
    sent = run_processes(_one_round, WORLD, args=(cfg,), timeout_s=120)
    assert cfg.schedule is not None
    blocks = [b.numel() * 4 for b in torch.tensor_split(torch.empty(NUMEL),
                                                        cfg.schedule.nblocks)]
    expected = sum(len(ring) * ring_bytes(blocks[b], len(ring))
                   for step in cfg.schedule.steps for ring, b in step.rings)
    assert sum(b for b, _ in sent) == expected
    assert expected >= 2 * (WORLD - 1) * NUMEL * 4 - WORLD  # no schedule beats the ring's volume


def test_gloo_ring_segments_follow_gloos_allreduce() -> None:
    """2f segments of ceil(B / 2f) bytes, 2f - 2 sends per phase; what a rank receives is what
    its right neighbour sends; over all ranks 2(f-1) x B, the closed form above."""
    for nbytes, ranks in ((4004, 4), (109_000, 6), (18_000, 3), (100, 4), (4, 3), (40, 7)):
        segs = [gloo_ring_segments(nbytes, 4, ranks, r) for r in range(ranks)]
        assert sum(sum(sent) for sent, _ in segs) == 2 * (ranks - 1) * nbytes
        for r in range(ranks):
            assert segs[r][1] == segs[(r + 1) % ranks][0]
    sent, received = gloo_ring_segments(18_000, 4, 3, 0)
    assert sent == received == [3000] * 8  # 6 segments of 3000 bytes, 4 sends per phase
    assert gloo_ring_segments(1000, 4, 1, 0) == ([], [])


def test_wire_bytes_count_preambles_segments_and_acks() -> None:
    # one full segment: 1448 = 48-byte gloo preamble + 1400 payload, one 66-byte header
    assert message_wire_bytes(1400) == 1448 + 66
    assert message_wire_bytes(1401) == 1449 + 2 * 66  # one byte more: a second segment
    assert ack_wire_bytes(1400) == 66 and ack_wire_bytes(1401) == 66  # 1 or 2 segments
    assert ack_wire_bytes(3 * 1448) == 2 * 66  # 4344 + 48 bytes: four segments, two ACKs


def test_collectives_record_payload_and_wire_bytes() -> None:
    """torch's all_reduce records exactly gloo's segments in frames plus the ACKs for what it
    received, and gloo's two notices a message (a SEND_READY for each it sends, a RECV_READY
    for each it receives: what simulation/gloo_rings.py counts); the p2p ring its messages
    likewise (headers and ACKs, not a second copy)."""
    sent = run_processes(_one_round_wire, WORLD, args=(prepare("torch", WORLD),), timeout_s=120)
    for rank, (payload, wire) in enumerate(sent):
        out, into = gloo_ring_segments(NUMEL * 4, 4, WORLD, rank)
        assert payload == sum(out)
        assert wire == (sum(map(message_wire_bytes, out)) + sum(map(ack_wire_bytes, into))
                        + NOTICE_WIRE_BYTES * (len(out) + len(into)))
    sent = run_processes(_one_round_wire, WORLD, args=(prepare("ring", WORLD),), timeout_s=120)
    assert all(payload < wire < 1.3 * payload for payload, wire in sent)


def _one_round_wire(rank: int, world: int, device: torch.device, cfg: SchemeConfig
                    ) -> tuple[int, int]:
    sync = make_sync(cfg, rank, world, lr=0.1)
    sync.step(0, torch.zeros(NUMEL), torch.full((NUMEL,), float(rank)))
    (stats,) = sync.history
    return stats.bytes, stats.wire_bytes
