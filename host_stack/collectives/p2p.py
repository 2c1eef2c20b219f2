"""The collectives' only calls that put data on the network (p2p sends and all_reduce), with
bounded waits and tags, and a count of what this process sent through them.

Two counts.  ``SENT.total`` is payload: what ``isend`` hands to torch.distributed, and for
``all_reduce`` the segments gloo's ring algorithm sends from this rank (gloo does not report
its own traffic, so ``gloo_ring_segments`` follows its allreduce.cc: 2f segments of
ceil(B / 2f) bytes over f ranks, 2f - 2 sends per phase).  The training table's sending rate
is made of it.  ``SENT.wire`` is what those messages put on this host's link: gloo's TCP
transport writes a 48-byte preamble before every message, TCP cuts the message into segments
of at most MSS bytes, each with Ethernet, IPv4 and TCP (timestamps) headers, and the
receiver of each message sends one ACK per two segments (Linux's delayed ACK); gloo's ring
all-reduce also sends its rendezvous notices, one frame each way a message
(``gloo_send_wire_bytes``, ``gloo_recv_wire_bytes``: what simulation/ counts for them too).
Head-to-head compares it with the bytes the emulated link counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

# Tags keep concurrent transfers between the same pair of ranks apart on gloo (NCCL ignores
# them and matches in issue order, which our executors keep identical on both sides).
TAG_LIMIT = 2**31 - 1
TCP_MSS = 1448  # TCP payload per segment at MTU 1500 with the timestamp option
FRAME_HEADERS = 66  # Ethernet 14 + IPv4 20 + TCP 20 + timestamps 12 per segment
GLOO_PREAMBLE = 48  # gloo's tcp transport: 6 x size_t (nbytes, opcode, slot, offsets) a message
# gloo's rendezvous: a receive sends the sender NOTIFY_RECV_READY and a send the receiver
# NOTIFY_SEND_READY, each a bare preamble in its own frame (gloo's sockets are TCP_NODELAY)
NOTICE_WIRE_BYTES = GLOO_PREAMBLE + FRAME_HEADERS


@dataclass
class SentBytes:
    """Running totals of what this process sent through the functions below."""

    total: int = 0  # payload bytes
    wire: int = 0  # frames on this host's link: the messages' segments and the ACKs it sent


SENT = SentBytes()


def ring_bytes(nbytes: int, ranks: int) -> int:
    """Bytes one rank sends in a ring all-reduce of ``nbytes`` over ``ranks``: 2(f-1)/f."""
    return 2 * (ranks - 1) * nbytes // ranks


def message_wire_bytes(nbytes: int) -> int:
    """Frames one gloo message of ``nbytes`` puts on the sender's link (preamble included)."""
    size = nbytes + GLOO_PREAMBLE
    return size + math.ceil(size / TCP_MSS) * FRAME_HEADERS


def ack_wire_bytes(nbytes: int) -> int:
    """ACK frames the receiver of one gloo message of ``nbytes`` sends: one per two segments."""
    return math.ceil(math.ceil((nbytes + GLOO_PREAMBLE) / TCP_MSS) / 2) * FRAME_HEADERS


def gloo_send_wire_bytes(nbytes: int) -> int:
    """What sending one message of gloo's ring all-reduce puts on the sender's link: its
    frames and its NOTIFY_SEND_READY notice."""
    return message_wire_bytes(nbytes) + NOTICE_WIRE_BYTES


def gloo_recv_wire_bytes(nbytes: int) -> int:
    """What receiving one message of gloo's ring all-reduce puts on the receiver's link: its
    ACKs and its NOTIFY_RECV_READY notice."""
    return ack_wire_bytes(nbytes) + NOTICE_WIRE_BYTES


def gloo_ring_iterations(nbytes: int, element: int, ranks: int, rank: int
                         ) -> list[tuple[int, int]]:
    """(send, receive) bytes of each iteration in which ``rank`` posts operations in gloo's ring
    all-reduce of ``nbytes`` (elements of ``element`` bytes) over ``ranks``: numSegments - 2
    of the reduce-scatter, then as many of the all-gather; 0 where gloo posts none (a segment
    past the buffer's end).  It sends to rank - 1 and receives from rank + 1.  The buffer is
    cut into numSegments = 2f segments of ceil(B / 2f) bytes (rounded up to whole elements;
    one MiB at most, so more segments only above 2f MiB), the last ones short or empty."""
    if ranks < 2 or nbytes <= 0:
        return []
    seg = min(-(-nbytes // (2 * ranks)), 1 << 20)
    seg = -(-seg // element) * element
    per_rank = -(-max(-(-nbytes // seg), 2 * ranks) // ranks)
    count = per_rank * ranks

    def length(first: int, i: int) -> int:
        return max(0, min(seg, nbytes - ((first * per_rank + i) * seg) % (count * seg)))

    return [(length(send_first, i), length(recv_first, i))
            for send_first, recv_first in ((rank + 1, rank + 2), (rank, rank + 1))
            for i in range(count - 2)]


def gloo_ring_segments(nbytes: int, element: int, ranks: int, rank: int
                       ) -> tuple[list[int], list[int]]:
    """Lengths of the messages ``rank`` sends and receives in gloo's ring all-reduce
    (``gloo_ring_iterations``): each phase (reduce-scatter, all-gather) sends and receives
    numSegments - 2 segments."""
    its = gloo_ring_iterations(nbytes, element, ranks, rank)
    return [s for s, _ in its if s > 0], [r for _, r in its if r > 0]


def ring_traffic(t: torch.Tensor, ranks: int, rank: int) -> tuple[int, int]:
    """(payload, wire) bytes ``rank`` puts on its link in gloo's ring all-reduce of ``t``
    over ``ranks``: the segments it sends, and their frames and notices plus its ACKs and
    notices for those it receives."""
    sent, received = gloo_ring_segments(t.numel() * t.element_size(), t.element_size(),
                                        ranks, rank)
    return sum(sent), (sum(map(gloo_send_wire_bytes, sent))
                       + sum(map(gloo_recv_wire_bytes, received)))


def all_reduce(t: torch.Tensor, group: dist.ProcessGroup | None = None,
               async_op: bool = False) -> dist.Work | None:
    """``dist.all_reduce`` (sum, in place), counting gloo's ring traffic for this rank."""
    payload, wire = ring_traffic(t, dist.get_world_size(group), dist.get_rank(group))
    SENT.total += payload
    SENT.wire += wire
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
    SENT.wire += message_wire_bytes(t.numel() * t.element_size())
    return dist.isend(t, dst, tag=tag)


def irecv(t: torch.Tensor, src: int, tag: int) -> dist.Work | None:
    """Non-blocking receive into ``t``; empty tensors are skipped, matching ``isend``."""
    if t.numel() == 0:
        return None
    SENT.wire += ack_wire_bytes(t.numel() * t.element_size())
    return dist.irecv(t, src, tag=tag)


def chunks(t: torch.Tensor, chunk_elems: int) -> list[torch.Tensor]:
    """Contiguous views of a 1-D tensor, each at most ``chunk_elems`` long (at least one)."""
    if t.numel() <= chunk_elems:
        return [t]
    return list(torch.split(t, chunk_elems))
