"""float32 gradients <-> int32 INA payloads: the scale policy and the overflow rules.

Scale policy (fixed for a job, so every worker, switch and PS agrees without talking):
every worker clips each gradient value to [-bound, bound] and multiplies by the power of two

    scale = 2 ** floor(log2((2**31 - 1) / (workers * bound)))

so the sum of all ``workers`` contributions always fits in int32: a switch adding them can
never overflow, and the PS (which accumulates in int64) never needs to.  A power of two makes
dequantisation exact (a float multiply by 2**-k) and keeps the most resolution the bound allows:
with 4 workers and bound 16 the step is 2**-25 ~ 3e-8.

Host overflow check: values beyond the bound are clipped, NaN/inf are sent as 0, both counted; the
count is reported per round, so a user sees when the bound is too small.

Switch OVERFLOW flag (saturated sum, which the policy above rules out unless a switch is set up
with a larger fan-in than the job's workers or a worker uses another bound): the PS drops that
aggregate and sends CTRL_OVERFLOW_NACK to the workers in its bitmap; they resend the chunk as
RETX, which switches never aggregate, and the PS sums those itself in int64.  The chunk thus
still completes exactly once, at the same scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

INT32_MAX = 2**31 - 1
DEFAULT_BOUND = 16.0


@dataclass(frozen=True)
class Quantizer:
    """The job-wide scale for ``workers`` contributions of magnitude at most ``bound``."""

    workers: int
    bound: float = DEFAULT_BOUND

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"quantizer workers={self.workers}: expected >= 1")
        if not (self.bound > 0 and math.isfinite(self.bound)):
            raise ValueError(f"quantizer bound={self.bound}: expected a finite number > 0")
        if self.exponent < 0:
            raise ValueError(f"quantizer bound={self.bound} with {self.workers} workers leaves "
                             "no integer resolution; lower the bound")

    @property
    def exponent(self) -> int:
        return math.floor(math.log2(INT32_MAX / (self.workers * self.bound)))

    @property
    def scale(self) -> float:
        return float(2 ** self.exponent)

    def quantize(self, values: np.ndarray) -> tuple[np.ndarray, int]:
        """(int32 values, number of values clipped or non-finite) for one worker's gradient."""
        v = np.asarray(values)
        if v.dtype != np.float32 or np.float32(self.bound) != self.bound:
            # float32 input with a float32 bound: clip, x 2**k and rint are exact in float32
            # and give the same integers as float64, at half the memory traffic
            v = v.astype(np.float64)
        bad = ~np.isfinite(v)
        v = np.where(bad, 0.0, v)
        clipped = int(np.count_nonzero(np.abs(v) > self.bound) + np.count_nonzero(bad))
        v = np.clip(v, -self.bound, self.bound)
        return np.rint(v * self.scale).astype(np.int32), clipped

    def dequantize(self, sums: np.ndarray) -> np.ndarray:
        """float32 values of int sums (int32 or int64)."""
        return (np.asarray(sums, dtype=np.float64) / self.scale).astype(np.float32)


def sum_overflows(sums: np.ndarray) -> np.ndarray:
    """Per-row flag: an int64 sum that would not fit the int32 a switch adds in."""
    s = np.asarray(sums, dtype=np.int64)
    return ((s > INT32_MAX) | (s < -(2**31))).reshape(s.shape[0], -1).any(axis=1)


def error_stats(exact: np.ndarray, approx: np.ndarray) -> dict[str, float]:
    """Max absolute and relative L2 error of ``approx`` against ``exact`` (for reports)."""
    e, a = np.asarray(exact), np.asarray(approx)
    if not e.dtype == a.dtype == np.float32:  # float32 pairs stay float32 (a report, 1e-7)
        e, a = e.astype(np.float64), a.astype(np.float64)
    d = a - e
    norm = float(np.sqrt(np.dot(e, e)))
    return {"max_abs_error": float(np.abs(d).max(initial=0.0)),
            "rel_l2_error": float(np.sqrt(np.dot(d, d)) / norm) if norm else 0.0}
