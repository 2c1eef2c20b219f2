"""Sum-all-reduce of one flat vector over a plan's PSs and switches: the engine under the
torch.distributed backend and the DDP communication hook (process_group.py, hook.py).

Every all-reduce call is one INA round (``round`` = the call's number, the same on every
worker because collectives are called in the same order everywhere).  A call of K chunks is
dealt to the PSs by the plan's shares x_s exactly as a training job's vector is
(``JobPlan.chunk_ranges``), each PS's part starting at chunk 0 of its shard, so the
switches aggregate it on the plan's paths like any round.  Chunks past a small call's end sit
the round out, which the PSs of an all-reduce job accept (``--mode allreduce``:
``ChunkAggregator.skip_rounds``).  A call longer than the PSs' shards together (the job's
``capacity`` values) takes several rounds.

Floating point goes through int32 at a scale every worker agrees on first: the largest
|value| of the call over all workers (one 8-byte all-reduce MAX on the control group), so
that W workers' sum can never leave int32 and no switch saturates:

    scale = 2 ** floor(log2((2**31 - 1) / (W * max|x|)))

Each worker's value is rounded to a multiple of 1/scale, so every element of the sum is
within W / (2 * scale) <= W**2 * max|x| / (2**31 - 1) of the exact sum, before it is rounded
once to the tensor's dtype (half a unit in the last place of |sum| <= W * max|x|):
``error_bound``.  A call holding NaN or inf, which int32 cannot carry, is summed by the
control group in IEEE arithmetic instead (counted: ``nonfinite_calls``); a call that is all
zeros needs no traffic.  int32 tensors go as they are: the sum wraps like gloo's, the
switches' saturated sums going back to the PS through the exact OVERFLOW path
(host_stack/ina/quantize.py).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np

from host_stack.ina.native import _batchio
from host_stack.ina.quantize import INT32_MAX
from host_stack.ina.transport import WorkerTransport
from host_stack.train.jobargs import Job

# agree(value) -> the largest ``value`` over all workers (a MAX all-reduce of one float)
AgreeMax = Callable[[float], float]
# exact(vector) -> the IEEE sum over all workers (the control group's own all-reduce)
ExactSum = Callable[[np.ndarray], np.ndarray]


INT32, FLOAT32 = 0, 1  # what _batchio.fill reads

# unit roundoff (half an ulp relative to the value) of the dtypes INA sums as float32
ROUNDOFF = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}


def error_bound(workers: int, max_abs: float, dtype: str = "float32") -> float:
    """Largest difference, per element, between an INA sum of ``workers`` tensors whose
    largest |value| is ``max_abs`` and the exact sum: quantization plus the final rounding."""
    return workers * workers * max_abs / INT32_MAX + ROUNDOFF[dtype] * workers * max_abs


def exponent(workers: int, max_abs: float) -> int:
    """log2 of the scale for a call whose largest |value| over all workers is ``max_abs``."""
    return math.floor(math.log2(INT32_MAX / (workers * max_abs)))


def deal(total: int, shares: list[float], capacity: list[int]) -> list[int]:
    """Chunks of a ``total``-chunk call per PS: largest remainder of x_s * total (the rule
    of ``JobPlan.chunk_ranges``), then any PS above its shard's chunks hands the excess to
    the next PSs with room, in PS order: the same answer on every worker."""
    exact = [x * total for x in shares]
    counts = [math.floor(e) for e in exact]
    order = sorted(range(len(exact)), key=lambda i: (counts[i] - exact[i], i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    excess = 0
    for i, cap in enumerate(capacity):
        if counts[i] > cap:
            excess += counts[i] - cap
            counts[i] = cap
    for i, cap in enumerate(capacity):
        take = min(excess, cap - counts[i])
        counts[i] += take
        excess -= take
    if excess:
        raise ValueError(f"all_reduce: {total} chunks exceed the PSs' {sum(capacity)}")
    return counts


class InaAllReduce:
    """One worker's end of the all-reduce; calls must come from one thread, in order."""

    def __init__(self, job: Job, transport: WorkerTransport, agree_max: AgreeMax,
                 exact_sum: ExactSum) -> None:
        self.job = job
        self.transport = transport
        self.agree_max = agree_max
        self.exact_sum = exact_sum
        self.workers = job.plan.workers
        self.n = job.n
        ps_ids = job.plan.ps_ids
        self.shares = [job.plan.shares[ps] for ps in ps_ids]
        self.capacity = [job.ranges[ps][1] - job.ranges[ps][0] for ps in ps_ids]
        self.round = 0
        self.counters: Counter[str] = Counter()
        self.bound_sum = 0.0  # error_bound of every float call so far, summed
        self._sums = np.empty(0, np.int32)

    @property
    def capacity_values(self) -> int:
        """Values one round carries at most (the PSs' shards together)."""
        return sum(self.capacity) * self.n

    def sum_int32(self, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The wrapped int32 sum over all workers of a flat int32 vector, in rounds, into
        ``out`` (may be ``values``) or a new array."""
        out = np.empty(values.size, np.int32) if out is None else out
        np.copyto(out, self._sum(values, INT32, 0)[:values.size])
        return out

    def sum_float(self, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The float32 sum over all workers of a flat float32 vector (bound: module doc), into
        ``out`` (may be ``values``) or a new array."""
        out = np.empty(values.size, np.float32) if out is None else out
        top = self.agree_max(_batchio.absmax(values))  # inf where any value is not finite
        self.counters["calls"] += 1
        if not math.isfinite(top):
            self.counters["nonfinite_calls"] += 1
            np.copyto(out, self.exact_sum(values))
            return out
        if top == 0.0:
            self.counters["zero_calls"] += 1
            out.fill(0.0)
            return out
        self.bound_sum += error_bound(self.workers, top)
        e = exponent(self.workers, top)
        # the int32 sum to float32 is the one rounding the bound allows for (x 2**-e is
        # exact in float64, where _batchio works)
        _batchio.dequantize(self._sum(values, FLOAT32, e), out, -e)
        return out

    def _sum(self, values: np.ndarray, kind: int, e: int) -> np.ndarray:
        """The int32 sums of ``values`` (int32, or float32 quantized at 2**e), in rounds of at
        most ``capacity_values``, padded to whole chunks: a buffer kept from call to call
        (its pages faulted in once), valid until the next call."""
        n = self.n
        padded = -(-values.size // n) * n
        if self._sums.size < padded:
            self._sums = np.empty(padded, np.int32)
        sums = self._sums
        for first in range(0, values.size, self.capacity_values):
            count = min(self.capacity_values, values.size - first)
            counts = deal(-(-count // n), self.shares, self.capacity)
            rows, results = [], []
            a = first
            for ps, k in enumerate(counts):
                r = self.transport.grad_rows(ps, self.round, k)
                _batchio.fill(r, r.shape[1], k, values, kind, a,
                              max(0, min(values.size, a + k * n) - a), e)
                rows.append(r)
                results.append(sums[a:a + k * n].reshape(k, n))
                a += k * n
            self.transport.exchange_rows(self.round, rows, results)
            self.round += 1
            self.counters["rounds"] += 1
            self.counters["chunks"] += sum(counts)
        return sums

    def close(self) -> None:
        self.transport.close()
