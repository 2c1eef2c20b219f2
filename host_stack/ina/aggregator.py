"""The PS's accept/complete rules for one shard (DESIGN.md section 4), free of sockets.

Per chunk the PS keeps the round being summed, the bitmap of contributions it holds and an
int64 sum, plus the last completed round and its RESULT payload.  A GRAD packet for (r, c):

- r == completed[c]: the chunk is done; the sender missed the RESULT -> answer it (unicast).
- r <  completed[c]: stale (everyone has moved on) -> drop, count.
- r == completed[c] + 1: summing round.  Accept only if its bitmap does not overlap the
  bitmap held (so a duplicate, a RETX of a counted contribution, or a switch aggregate that
  repeats one is never added twice); when every worker's bit is in, complete the chunk.
- r >  completed[c] + 1: impossible from a correct worker (it would need this chunk's RESULT
  of round r-1) -> drop, count.  Unless ``skip_rounds``: an all-reduce PS (host_stack/ddp)
  numbers rounds by collective call, and a call smaller than the shard leaves the chunks past
  its end out, so r > completed[c] + 1 starts the chunk's next sum as r == completed[c] + 1
  does.  Still exactly once: a worker sends round r only after every chunk it used in earlier
  calls completed, so no contribution of a round between completed[c] and r is outstanding.

Switch aggregates (count > 1, bitmap = union) follow the same rule; count must equal the
bitmap's popcount.  Sums are int64, so nothing the PS adds can overflow.

The rules run in C over whole batches of packets (host_stack/ina/_batchio.c, ``aggregate``),
in arrival order; ``offer`` is the same code for one packet.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from enum import StrEnum

import numpy as np

from host_stack.ina.native import _batchio


class Verdict(StrEnum):
    """What the PS does with one GRAD packet."""

    ACCEPTED = "accepted"
    COMPLETED = "completed"
    ANSWER_LATE = "answer_late"
    DROPPED = "dropped"


# verdict codes of offer_batch (the C enum's order); DUPLICATE is a DROPPED whose bits the PS
# already held, which the PS tells apart (a RETX dropped so was spurious)
ACCEPTED, COMPLETED, ANSWER_LATE, DROPPED, DUPLICATE = range(5)
_VERDICTS = (Verdict.ACCEPTED, Verdict.COMPLETED, Verdict.ANSWER_LATE, Verdict.DROPPED,
             Verdict.DROPPED)
_COUNTERS = ("drop_bad_chunk", "drop_bad_bitmap", "drop_bad_count", "late_request",
             "drop_stale_round", "drop_future_round", "drop_duplicate", "accepted",
             "contributions", "completed", "sum_exceeds_int32")
assert len(_COUNTERS) == _batchio.N_COUNTERS

# complete(chunks, (m, N) int64 sums) -> (m, 4 N) uint8 RESULT payloads (N big-endian words)
CompleteFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


class ChunkAggregator:
    """Exactly-once summation of one PS shard across ``workers`` ranks."""

    def __init__(self, n_chunks: int, n: int, workers: int, complete: CompleteFn,
                 completed_round: np.ndarray | None = None, skip_rounds: bool = False) -> None:
        self.n_chunks = n_chunks
        self.skip_rounds = skip_rounds
        self.n = n
        self.all_bits = (1 << workers) - 1
        self.complete_fn = complete
        self.completed = (np.full(n_chunks, -1, dtype=np.int64) if completed_round is None
                          else completed_round.astype(np.int64).copy())
        self.sum_round = np.full(n_chunks, -1, dtype=np.int64)
        self.bits = np.zeros(n_chunks, dtype=np.uint64)
        self.retx_seen = np.zeros(n_chunks, dtype=np.uint8)  # a RETX contributed this round
        self.sums = np.zeros((n_chunks, n), dtype=np.int64)
        self.epoch = np.zeros(n_chunks, dtype=np.uint32)  # call that last completed the chunk
        self.calls = 0
        self.results = np.zeros((n_chunks, 4 * n), dtype=np.uint8)
        self.result_retx = np.zeros(n_chunks, dtype=bool)  # RETX flag of the chunk's RESULT
        self.has_result = np.zeros(n_chunks, dtype=bool)
        self.counters: Counter[str] = Counter()
        self._counts = np.zeros(len(_COUNTERS), dtype=np.int64)

    def offer_batch(self, rounds: np.ndarray, chunks: np.ndarray, bitmaps: np.ndarray,
                    counts: np.ndarray, retx: np.ndarray, values: np.ndarray
                    ) -> tuple[int, np.ndarray]:
        """Apply the rules to packets in order; (how many were processed, their verdicts).

        Fewer than all are processed when a packet would start a new round on a chunk that
        completed earlier in this call: its RESULT must go out before the next batch call.
        Completed chunks' RESULT payloads are in ``results`` when this returns.
        """
        k = len(rounds)
        verdicts = np.empty(k, dtype=np.int8)
        self._start_call()
        done = _batchio.aggregate(
            np.ascontiguousarray(rounds, np.uint32), np.ascontiguousarray(chunks, np.uint32),
            np.ascontiguousarray(bitmaps, np.uint64), np.ascontiguousarray(counts, np.uint16),
            np.ascontiguousarray(retx, np.uint8), np.ascontiguousarray(values, np.int32),
            self.all_bits, self.calls, self.skip_rounds, *self._state(verdicts))
        return done, self._finish(done, verdicts, chunks)

    def offer_rows(self, rows: np.ndarray, start: int, k: int, lens: np.ndarray, job: int
                   ) -> tuple[int, np.ndarray] | None:
        """``offer_batch`` straight from received packets rows[start:k] (wire format, as
        batchio receives them): (how many were processed, their verdicts); None, with
        nothing done, unless every one is a GRAD of ``job`` with no flag but
        RETX, which the caller then takes apart itself.  The PS's usual receive, without
        the dozens of numpy calls that parsing it into fields took."""
        verdicts = np.empty(k - start, dtype=np.int8)
        chunks = np.empty(k - start, dtype=np.uint32)
        self._start_call()
        done = _batchio.grads(rows, rows.shape[1], start, k, lens, job, self.all_bits,
                              self.calls, self.skip_rounds, *self._state(verdicts), chunks)
        if done < 0:
            return None
        return done, self._finish(done, verdicts, chunks)

    def _start_call(self) -> None:
        self.calls = (self.calls + 1) & 0xFFFFFFFF
        self._counts[:] = 0

    def _state(self, verdicts: np.ndarray) -> tuple[np.ndarray, ...]:
        """The arrays the C rules read and update, in their order."""
        return (self.completed, self.sum_round, self.bits, self.retx_seen, self.sums,
                self.epoch, verdicts, self._counts)

    def _finish(self, done: int, verdicts: np.ndarray, chunks: np.ndarray) -> np.ndarray:
        """Counters and RESULT payloads after a call of the C rules; its verdicts."""
        for name, value in zip(_COUNTERS, self._counts.tolist(), strict=True):
            if value:
                self.counters[name] += value
        verdicts = verdicts[:done]
        finished = np.asarray(chunks[:done], dtype=np.int64)[verdicts == COMPLETED]
        if finished.size:
            rows = run_or_index(finished)
            self.results[rows] = self.complete_fn(finished, self.sums[rows])
            self.result_retx[rows] = self.retx_seen[rows].astype(bool)
            self.has_result[rows] = True
        return verdicts

    def offer(self, round_: int, chunk: int, bitmap: int, count: int,
              values: np.ndarray, retx: bool = False) -> Verdict:
        """One GRAD packet whose fields were already range-checked."""
        _, verdicts = self.offer_batch(np.array([round_]), np.array([chunk]),
                                       np.array([bitmap], np.uint64), np.array([count]),
                                       np.array([retx]), np.asarray(values).reshape(1, -1))
        return _VERDICTS[verdicts[0]]

    def result(self, chunk: int) -> bytes:
        """RESULT payload of the chunk's last completed round."""
        if not self.has_result[chunk]:
            raise KeyError(f"chunk {chunk} has no completed round")
        return self.results[chunk].tobytes()


def run_or_index(idx: np.ndarray) -> slice | np.ndarray:
    """``idx`` as a slice where it is one ascending run of rows (chunks complete in order,
    usually), so that indexing with it takes views instead of copying every row's values
    (a PS's sums are int64: the gathers were 2 of its 5 passes over each RESULT); else
    ``idx`` itself."""
    if idx.size and (idx.size == 1 or bool((np.diff(idx) == 1).all())):
        return slice(int(idx[0]), int(idx[0]) + idx.size)
    return idx
