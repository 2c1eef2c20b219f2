"""The collectives' only calls that put data on the network (p2p sends and all_reduce), with
bounded waits and tags, and a count of the bytes this process sent through them.

The count is what the training table's sending rate is made of: ``isend`` counts the tensor
it hands to torch.distributed; ``all_reduce`` counts what gloo's ring algorithm sends from
this rank, 2(f-1)/f of the tensor over f ranks (reduce-scatter, then all-gather), since gloo
does not report its own traffic.  Payload bytes only, no TCP/IP headers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

# Tags keep concurrent transfers between the same pair of ranks apart on gloo (NCCL ignores
# them and matches in issue order, which our executors keep identical on both sides).
TAG_LIMIT = 2**31 - 1


@dataclass
class SentBytes:
    """Running total of the bytes this process sent through the functions below."""

    total: int = 0


SENT = SentBytes()


def ring_bytes(nbytes: int, ranks: int) -> int:
    """Bytes one rank sends in a ring all-reduce of ``nbytes`` over ``ranks``: 2(f-1)/f."""
    return 2 * (ranks - 1) * nbytes // ranks


def all_reduce(t: torch.Tensor, group: dist.ProcessGroup | None = None,
               async_op: bool = False) -> dist.Work | None:
    """``dist.all_reduce`` (sum, in place), counting gloo's ring traffic for this rank."""
    SENT.total += ring_bytes(t.numel() * t.element_size(), dist.get_world_size(group))
    return dist.all_reduce(t, group=group, async_op=async_op)


def wait(work: dist.Work | None, timeout_s: float) -> None:
    """Wait for one p2p operation, raising instead of hanging past ``timeout_s``."""
    if work is not None:
        work.wait(timeout=timedelta(seconds=timeout_s))


def isend(t: torch.Tensor, dst: int, tag: int) -> dist.Work | None:
    """Non-blocking send; empty tensors are not sent (the receiver skips them too)."""
    if t.numel() == 0:
        return None
    SENT.total += t.numel() * t.element_size()
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
