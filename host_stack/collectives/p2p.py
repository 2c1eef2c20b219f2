"""Point-to-point helpers shared by the ring and tree executors: bounded waits, tags."""

from __future__ import annotations

from datetime import timedelta

import torch
import torch.distributed as dist

# Tags keep concurrent transfers between the same pair of ranks apart on gloo (NCCL ignores
# them and matches in issue order, which our executors keep identical on both sides).
TAG_LIMIT = 2**31 - 1


def wait(work: dist.Work | None, timeout_s: float) -> None:
    """Wait for one p2p operation, raising instead of hanging past ``timeout_s``."""
    if work is not None:
        work.wait(timeout=timedelta(seconds=timeout_s))


def isend(t: torch.Tensor, dst: int, tag: int) -> dist.Work | None:
    """Non-blocking send; empty tensors are not sent (the receiver skips them too)."""
    if t.numel() == 0:
        return None
    return dist.isend(t, dst, tag=tag)


def irecv(t: torch.Tensor, src: int, tag: int) -> dist.Work | None:
    """Non-blocking receive into ``t``; empty tensors are skipped, matching ``isend``."""
    if t.numel() == 0:
        return None
    return dist.irecv(t, src, tag=tag)


def chunks(t: torch.Tensor, chunk_elems: int) -> list[torch.Tensor]:
    """Contiguous views of a 1-D tensor, each at most ``chunk_elems`` long (at least one)."""
    if t.numel() <= chunk_elems:
        return [t]
    return list(torch.split(t, chunk_elems))
