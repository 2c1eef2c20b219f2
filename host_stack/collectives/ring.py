"""Chunked, pipelined ring all-reduce (reduce-scatter then all-gather) over p2p operations.

The buffer is cut into one segment per rank (``tensor_split``: sizes differ by at most one
element, empty segments when there are fewer elements than ranks) and every segment into
chunks.  Transfer t = 0 .. 2(n-1)-1 sends segment (pos - t) mod n to the next rank and receives
segment (pos - t - 1) mod n from the previous one, adding it during the first n-1 transfers
(reduce-scatter) and copying it during the rest (all-gather).  The segment received in
transfer t is exactly the one sent in transfer t+1, so each chunk is forwarded as soon as it
has been reduced: the pipeline runs per chunk, not per step.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.distributed as dist

from host_stack.collectives.p2p import TAG_LIMIT, chunks, irecv, isend, wait

# 4 MB: on 2 CPU cores smaller chunks cost more in per-wait overhead than pipelining gains
# (4 procs, 16 MB: 1.06x torch with 4M chunks, 1.22x with 1M, 1.57x with 256K; gloo, loopback)
DEFAULT_CHUNK_BYTES = 4 << 20


def ring_order(ranks: Sequence[int] | None) -> list[int]:
    """The ring as a list of global ranks (default: all ranks in order), validated."""
    order = list(range(dist.get_world_size())) if ranks is None else [int(r) for r in ranks]
    if len(set(order)) != len(order):
        raise ValueError(f"ranks: expected distinct ranks in ring order, got {order}")
    if dist.get_rank() not in order:
        raise ValueError(f"ranks: rank {dist.get_rank()} is not in the ring {order}")
    return order


def ring_all_reduce(tensor: torch.Tensor, ranks: Sequence[int] | None = None,
                    chunk_bytes: int = DEFAULT_CHUNK_BYTES, timeout_s: float = 60.0,
                    tag_base: int = 0) -> torch.Tensor:
    """Sum ``tensor`` in place over ``ranks`` (global ranks, in ring order); returns it.

    Every rank of the ring must call this with the same ring, shape, dtype and chunk size.
    """
    if not tensor.is_contiguous():
        raise ValueError("tensor: expected a contiguous tensor (the ring works on a flat view)")
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes: expected >= 1, got {chunk_bytes}")
    order = ring_order(ranks)
    n = len(order)
    if n == 1 or tensor.numel() == 0:
        return tensor
    pos = order.index(dist.get_rank())
    nxt, prv = order[(pos + 1) % n], order[(pos - 1) % n]
    flat = tensor.view(-1)
    chunk_elems = max(1, chunk_bytes // flat.element_size())
    segs = [chunks(s, chunk_elems) for s in torch.tensor_split(flat, n)]
    per_transfer = max(len(c) for c in segs)
    transfers = 2 * (n - 1)
    if tag_base + transfers * per_transfer > TAG_LIMIT:
        raise ValueError("chunk_bytes: too small for this size (p2p tags would overflow)")
    # two scratch buffers: transfer t + 1's receives are posted while t's is being reduced
    scratch = [torch.empty(sum(c.numel() for c in segs[0]), dtype=flat.dtype,
                           device=flat.device) for _ in range(2)]

    def tag(t: int, c: int) -> int:
        return tag_base + t * per_transfer + c

    def post_recvs(t: int) -> tuple[list[torch.Tensor], list]:
        """Transfer t's receive buffers (scratch while reducing, else the segment itself) and
        their posted receives."""
        incoming = segs[(pos - t - 1) % n]
        bufs = (chunks(scratch[t % 2][: sum(c.numel() for c in incoming)], chunk_elems)
                if t < n - 1 else incoming)
        return bufs, [irecv(b, prv, tag(t, i)) for i, b in enumerate(bufs)]

    sends: list[list] = [[] for _ in range(transfers)]
    settled = 0  # sends[:settled] are complete (gloo counts waits: each one is waited once)

    def settle(upto: int) -> None:
        nonlocal settled
        for k in range(settled, min(upto, transfers - 1) + 1):
            for w in sends[k]:
                wait(w, timeout_s)
        settled = max(settled, upto + 1)

    posted = post_recvs(0)
    sends[0] = [isend(c, nxt, tag(0, i)) for i, c in enumerate(segs[pos % n])]
    for t in range(transfers):
        # before transfer t + 1 may overwrite a segment sent back then: the one transfer
        # t + 2 - n sent
        settle(t - 1 if n > 2 else t)
        bufs, recvs = posted
        # gloo sends a message only once its receiver has posted the receive, and the
        # receiver's notice queues on its link behind whatever it sent before: posting
        # transfer t + 1's receives before forwarding this transfer's chunks keeps the notice
        # ahead of them (posted after, each transfer waited for the receiver's own one)
        if t + 1 < transfers:
            posted = post_recvs(t + 1)
        incoming = segs[(pos - t - 1) % n]
        for i, (c, b, r) in enumerate(zip(incoming, bufs, recvs, strict=True)):
            wait(r, timeout_s)
            if t < n - 1:
                c.add_(b)
            if t + 1 < transfers:
                sends[t + 1].append(isend(c, nxt, tag(t + 1, i)))
    settle(transfers - 1)
    return tensor
