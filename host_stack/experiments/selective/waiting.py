"""Progress-aware waiting: the compute-time CDF learned online (Eq. 4) and BPAWR (Alg. 2)."""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from host_stack.experiments.selective.grouping import Worker, bag

READY_MODES = ("printed", "conditional")


class EmpiricalCDF:
    """F(t) = share of observed compute times <= t, over a sliding window of observations.

    Cold start is an empty CDF (F = 0: nobody is expected, so nobody is waited for); warm start
    pre-loads samples of the known distribution.  The window lets it follow a drifting workload.
    """

    def __init__(self, samples: Iterable[float] = (), window: int = 5000) -> None:
        if window < 1:
            raise ValueError(f"window: expected >= 1 observations, got {window}")
        self.window = window
        self._fifo: deque[float] = deque()
        self._sorted: list[float] = []
        for s in samples:
            self.observe(s)

    def observe(self, duration: float) -> None:
        """Record one completed compute round's duration (seconds)."""
        if duration < 0:
            raise ValueError(f"duration: expected >= 0 seconds, got {duration}")
        self._fifo.append(duration)
        bisect.insort(self._sorted, duration)
        if len(self._fifo) > self.window:
            old = self._fifo.popleft()
            del self._sorted[bisect.bisect_left(self._sorted, old)]

    def __len__(self) -> int:
        return len(self._sorted)

    def __call__(self, t: float) -> float:
        if not self._sorted:
            return 0.0
        return bisect.bisect_right(self._sorted, t) / len(self._sorted)


def ready_probability(cdf: Callable[[float], float], elapsed: float, dt: float,
                      mode: str = "printed") -> float:
    """Probability that a worker `elapsed` seconds into its round is ready within `dt`.

    "printed" is the paper's Eq. 4, F(t + dt) (it drops the conditioning on T > t and so
    over-estimates for workers that are already late); "conditional" is the correct
    P(T <= t + dt | T > t) = (F(t + dt) - F(t)) / (1 - F(t)).  Choice: a worker that has run
    longer than every observation (F(t) = 1) gets 0 under "conditional" - no evidence says
    it finishes soon, and waiting on stragglers is what partial reduce exists to avoid.
    """
    if mode == "printed":
        return cdf(elapsed + dt)
    if mode == "conditional":
        done = cdf(elapsed)
        if done >= 1.0:
            return 0.0
        return max(0.0, (cdf(elapsed + dt) - done) / (1.0 - done))
    raise ValueError(f"mode: expected one of {READY_MODES}, got {mode!r}")


@dataclass
class Decision:
    """BPAWR's verdict on one group: hold it (wait) or launch it, and whom to drop if held."""

    wait: bool
    excluded: list[Worker] = field(default_factory=list)
    expected_new: int = 0
    saving_s: float = 0.0


@dataclass(frozen=True)
class _Virtual:
    """A worker expected to become ready within dt (Alg. 2 line 11)."""

    index: int


def bpawr(in_training: set[Worker], group: Sequence[Worker], p: int, eta: float, dt: float,
          v: float, bw: Mapping[Worker, float], theta: float,
          ready_prob: Callable[[Worker], float]) -> Decision:
    """Alg. 2: is waiting dt for faster workers worth more than theta * dt of ring time?

    Removes the candidates it considered from `in_training` (line 7) so later groups of the same
    decision round do not count on them too.  Choices (the selective reduce paper leaves them open):
    the returned flag means "wait" (the paper's Alg. 3 reads it as "launch"); a group below p always
    waits; when no worker is expected (k = 0) waiting cannot pay, so the group launches as is
    (otherwise a group that BAG would split again could be held forever). Saving t_X uses the
    printed approximation 2v/min b(g) - 2v/min b(g*).
    """
    if len(group) < p:
        return Decision(wait=True)
    b_hat = min(bw[w] for w in group)
    candidates = [(w, bw[w], ready_prob(w)) for w in in_training if bw[w] > b_hat]
    in_training.difference_update(w for w, _, _ in candidates)
    total = sum(pr for _, _, pr in candidates)
    k = int(total)
    if k == 0:
        return Decision(wait=False)
    expected_bw = sum(b * pr for _, b, pr in candidates) / total
    virtual = [_Virtual(j) for j in range(k)]
    ext_bw = {**{w: bw[w] for w in group}, **{x: expected_bw for x in virtual}}
    best = bag([*group, *virtual], p, eta, ext_bw)[0]
    saving = 2 * v / b_hat - 2 * v / min(ext_bw[w] for w in best)
    if saving > theta * dt:
        best_set = set(best)
        excluded = [w for w in group if w not in best_set]
        return Decision(wait=True, excluded=excluded, expected_new=k, saving_s=saving)
    return Decision(wait=False, expected_new=k, saving_s=saving)
