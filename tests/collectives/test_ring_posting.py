"""The ring posts every transfer's receives before it forwards that transfer's chunks.

gloo sends a message only once the receiver has posted the receive, and the receiver's notice
goes out on its own link behind whatever it handed the network first; a receive posted after
the rank's own forward waited for that whole forward (on fig1's emulation every ring step took
two transfer times instead of one)."""

from __future__ import annotations

import math

import pytest
import torch

from host_stack.collectives.launch import run_processes

NUMEL, CHUNK_BYTES = 3001, 1024  # several chunks per segment


def _order(rank: int, world: int, device: torch.device) -> tuple[list[tuple[str, int]], float]:
    import torch.distributed as dist

    from host_stack.collectives import ring

    calls: list[tuple[str, int]] = []
    send, recv = ring.isend, ring.irecv

    def isend(t, dst, tag):
        calls.append(("send", tag))
        return send(t, dst, tag)

    def irecv(t, src, tag):
        calls.append(("recv", tag))
        return recv(t, src, tag)

    ring.isend, ring.irecv = isend, irecv
    x = torch.arange(NUMEL, dtype=torch.float32) * (rank + 1)
    ref = x.clone()
    dist.all_reduce(ref)
    ring.ring_all_reduce(x, chunk_bytes=CHUNK_BYTES)
    return calls, float((x - ref).abs().max())


@pytest.mark.parametrize("world", [2, 3, 4])
def test_receives_of_a_transfer_are_posted_before_its_sends(world: int) -> None:
    segment = math.ceil(NUMEL / world)  # the largest of tensor_split's segments
    per_transfer = math.ceil(segment / (CHUNK_BYTES // 4))
    for calls, err in run_processes(_order, world, timeout_s=120):
        assert err == 0.0
        transfer = [(kind, tag // per_transfer) for kind, tag in calls]
        for t in range(2 * (world - 1)):
            last_recv = max(i for i, c in enumerate(transfer) if c == ("recv", t))
            first_send = min(i for i, c in enumerate(transfer) if c == ("send", t))
            assert last_recv < first_send, f"transfer {t}: a send went before its receives"
