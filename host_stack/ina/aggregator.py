"""The PS's accept/complete rules for one shard (DESIGN.md section 4), free of sockets.

Per chunk the PS keeps the round being summed, the bitmap of contributions it holds and an
int64 sum, plus the last completed round and its RESULT payload.  A GRAD packet for (r, c):

- r == completed[c]: the chunk is done; the sender missed the RESULT -> answer it (unicast).
- r <  completed[c]: stale (everyone has moved on) -> drop, count.
- r == completed[c] + 1: summing round.  Accept only if its bitmap does not overlap the
  bitmap held (so a duplicate, a RETX of a counted contribution, or a switch aggregate that
  repeats one is never added twice); when every worker's bit is in, complete the chunk.
- r >  completed[c] + 1: impossible from a correct worker (it would need this chunk's RESULT
  of round r-1) -> drop, count.

Switch aggregates (count > 1, bitmap = union) follow the same rule; count must equal the
bitmap's popcount.  Sums are int64, so nothing the PS adds can overflow.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from enum import StrEnum

import numpy as np

from host_stack.ina.quantize import sum_overflows


class Verdict(StrEnum):
    """What the PS does with one GRAD packet."""

    ACCEPTED = "accepted"
    COMPLETED = "completed"
    ANSWER_LATE = "answer_late"
    DROPPED = "dropped"


# complete(chunk, int64 sums) -> RESULT payload bytes (N big-endian 32-bit words)
CompleteFn = Callable[[int, np.ndarray], bytes]


class ChunkAggregator:
    """Exactly-once summation of one PS shard across ``workers`` ranks."""

    def __init__(self, n_chunks: int, n: int, workers: int, complete: CompleteFn,
                 completed_round: np.ndarray | None = None) -> None:
        self.n_chunks = n_chunks
        self.n = n
        self.all_bits = (1 << workers) - 1
        self.complete_fn = complete
        self.completed = (np.full(n_chunks, -1, dtype=np.int64) if completed_round is None
                          else completed_round.astype(np.int64).copy())
        self.sum_round = np.full(n_chunks, -1, dtype=np.int64)
        self.bits = [0] * n_chunks
        self.retx_seen = np.zeros(n_chunks, dtype=bool)  # a RETX contributed this round
        self.sums = np.zeros((n_chunks, n), dtype=np.int64)
        self.results: list[bytes | None] = [None] * n_chunks
        self.counters: Counter[str] = Counter()

    def offer(self, round_: int, chunk: int, bitmap: int, count: int,
              values: np.ndarray, retx: bool = False) -> Verdict:
        """Apply the rules above to one GRAD packet whose fields were already range-checked."""
        c = self.counters
        if chunk >= self.n_chunks:
            c["drop_bad_chunk"] += 1
            return Verdict.DROPPED
        if bitmap == 0 or bitmap & ~self.all_bits:
            c["drop_bad_bitmap"] += 1
            return Verdict.DROPPED
        if count != bitmap.bit_count():
            c["drop_bad_count"] += 1
            return Verdict.DROPPED
        done = int(self.completed[chunk])
        if round_ == done:
            c["late_request"] += 1
            return Verdict.ANSWER_LATE
        if round_ < done:
            c["drop_stale_round"] += 1
            return Verdict.DROPPED
        if round_ > done + 1:
            c["drop_future_round"] += 1
            return Verdict.DROPPED
        if self.sum_round[chunk] != round_:
            self.sum_round[chunk] = round_
            self.bits[chunk] = 0
            self.sums[chunk] = 0
            self.retx_seen[chunk] = False
        if self.bits[chunk] & bitmap:
            c["drop_duplicate"] += 1
            return Verdict.DROPPED
        self.sums[chunk] += values
        self.bits[chunk] |= bitmap
        self.retx_seen[chunk] |= retx
        c["accepted"] += 1
        c["contributions"] += count
        if self.bits[chunk] != self.all_bits:
            return Verdict.ACCEPTED
        if sum_overflows(self.sums[chunk:chunk + 1])[0]:
            # a switch adding these would have saturated: some worker used a larger scale
            # than the job's policy allows (the PS's int64 sum itself is still exact)
            c["sum_exceeds_int32"] += 1
        self.results[chunk] = self.complete_fn(chunk, self.sums[chunk])
        self.completed[chunk] = round_
        c["completed"] += 1
        return Verdict.COMPLETED

    def result(self, chunk: int) -> bytes:
        """RESULT payload of the chunk's last completed round."""
        out = self.results[chunk]
        if out is None:
            raise KeyError(f"chunk {chunk} has no completed round")
        return out
