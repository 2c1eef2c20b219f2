"""What each collective reports per round (bytes sent, communication time), counted at its
sends, against the closed forms: a ring or RAT-tree all-reduce of B bytes over W ranks sends
2(W-1)/W x B per rank on average (every segment or slice crosses each of W-1 hops twice)."""

from __future__ import annotations

import pytest
import torch

from host_stack.collectives.launch import run_processes
from host_stack.collectives.p2p import ring_bytes
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
