"""The logically centralised controller of Alg. 3 and its two baselines.

One decision object drives both the simulator and the real run: workers report ``ready``,
the controller's ``decide`` returns the groups to launch, and ``sync_done`` puts a group's
workers back into training.  Choices for Alg. 3 (the paper's pseudo-code is inconsistent):
- a group launches only if it has >= p workers and BPAWR says waiting does not pay;
- k counts every launched synchronisation, full ones included (the paper never increments k
  after a full sync, which would force a full sync forever once k % c == 0);
- ``c=None`` (default) disables the periodic full all-reduce: the paper gives no default c.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from host_stack.experiments.selective.grouping import Worker, bag, partial_groups
from host_stack.experiments.selective.waiting import EmpiricalCDF, bpawr, ready_probability

SCHEMES = ("selective", "partial", "allreduce")


@dataclass
class BaseController:
    """Bookkeeping every scheme needs: who is ready (FIFO) and who trains since when."""

    workers: Sequence[Worker]
    queue: list[Worker] = field(default_factory=list)
    training_since: dict[Worker, float] = field(default_factory=dict)
    holding: bool = False
    launched: int = 0

    def __post_init__(self) -> None:
        if len(set(self.workers)) != len(self.workers):
            raise ValueError("workers: expected distinct worker ids")

    def start(self, now: float) -> None:
        """Every worker starts its first round at `now`."""
        self.training_since = {w: now for w in self.workers}

    def ready(self, w: Worker, now: float) -> None:
        """Worker `w` finished its compute round and waits for a synchronisation."""
        if w not in self.training_since:
            raise ValueError(f"worker {w!r}: reported ready but is not training")
        self.observe(now - self.training_since.pop(w))
        self.queue.append(w)

    def observe(self, duration: float) -> None:
        """Hook for schemes that learn the compute-time distribution."""

    def sync_done(self, group: Sequence[Worker], now: float) -> None:
        """A launched group finished; its workers start their next round."""
        for w in group:
            self.training_since[w] = now

    def decide(self, now: float) -> list[list[Worker]]:
        """Groups to launch now (removed from the queue)."""
        raise NotImplementedError

    def _launch(self, groups: list[list[Worker]]) -> list[list[Worker]]:
        launched = {w for g in groups for w in g}
        self.queue = [w for w in self.queue if w not in launched]
        self.launched += len(groups)
        return groups


class AllReduceController(BaseController):
    """Synchronous all-reduce: everyone, every round."""

    def decide(self, now: float) -> list[list[Worker]]:
        if self.queue and len(self.queue) == len(self.workers):
            return self._launch([list(self.queue)])
        return []


@dataclass
class PartialController(BaseController):
    """Partial reduce: the first p ready workers, as soon as p are ready."""

    p: int = 1

    def decide(self, now: float) -> list[list[Worker]]:
        return self._launch(partial_groups(list(self.queue), self.p))


@dataclass
class SelectiveController(BaseController):
    """Alg. 3: BAG over the ready queue, BPAWR per group, periodic full sync every c."""

    p: int = 1
    eta: float = 0.3
    theta: float = 1.0
    dt: float = 0.1
    v: float = 1.0
    bandwidth: Callable[[], Mapping[Worker, float]] = dict
    cdf: EmpiricalCDF = field(default_factory=EmpiricalCDF)
    ready_mode: str = "printed"
    c: int | None = None

    def observe(self, duration: float) -> None:
        self.cdf.observe(duration)

    def decide(self, now: float) -> list[list[Worker]]:
        n = len(self.workers)
        self.holding = False
        if self.c is not None and self.launched % self.c == 0:
            if self.queue and len(self.queue) == n:
                return self._launch([list(self.queue)])
            return []
        if len(self.queue) < self.p:
            return []
        bw = self.bandwidth()
        in_training = set(self.training_since)
        groups = bag(self.queue, self.p, self.eta, bw)
        out: list[list[Worker]] = []
        for i, g in enumerate(groups):
            verdict = bpawr(in_training, g, self.p, self.eta, self.dt, self.v, bw, self.theta,
                            self._ready_prob(now))
            if verdict.wait:
                self.holding = self.holding or len(g) >= self.p
                if verdict.excluded and i + 1 < len(groups):
                    moved = set(verdict.excluded)
                    groups[i + 1].extend(verdict.excluded)
                    g[:] = [w for w in g if w not in moved]
            else:
                out.append(list(g))
        return self._launch(out)

    def _ready_prob(self, now: float) -> Callable[[Worker], float]:
        def prob(w: Worker) -> float:
            return ready_probability(self.cdf, now - self.training_since[w], self.dt,
                                     self.ready_mode)
        return prob


def make_controller(scheme: str, workers: Sequence[Worker], p: int, **selective: object
                    ) -> BaseController:
    """Build the controller of `scheme` (one of SCHEMES)."""
    if scheme == "allreduce":
        return AllReduceController(list(workers))
    if scheme == "partial":
        return PartialController(list(workers), p=p)
    if scheme == "selective":
        return SelectiveController(list(workers), p=p, **selective)  # type: ignore[arg-type]
    raise ValueError(f"scheme: expected one of {SCHEMES}, got {scheme!r}")
