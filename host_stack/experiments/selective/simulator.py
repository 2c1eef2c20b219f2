"""Flow-level discrete-event simulator of partial synchronisation (selective reduce paper, IV-A).

Workers sit behind a non-blocking switch; contention happens only at their edge links (one
uplink and one downlink per worker, both b_i).  A ring all-reduce of group g is |g| flows
w_j -> w_{j+1}, moved in lock-step, so the ring is one rate-coupled entity that uses every
member's uplink and downlink; link capacity is shared max-min fairly among the rings using
it (progressive filling), recomputed whenever a ring starts or ends.  Each flow carries
2(|g|-1)/|g| v bytes and the ring ends 2(|g|-1) alpha after its data, which gives Eq. 2
exactly when a ring has its links to itself.

Compute times are lognormal.  Fig. 1 of the paper (measured by Eager-SGD) is not in our text,
so the two traces are our stand-ins with the shapes it describes: "cnn" (ResNet-50, server
performance variability: a narrow body with a tail; median 0.45 s, sigma 0.25) and
"transformer" (WMT16, sentence-length variability: wide; median 0.6 s, sigma 0.6).
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Hashable
from dataclasses import asdict, dataclass, field

from host_stack.experiments.selective.controller import SCHEMES, BaseController, make_controller
from host_stack.experiments.selective.waiting import READY_MODES, EmpiricalCDF

TRACES: dict[str, tuple[float, float]] = {"cnn": (0.45, 0.25), "transformer": (0.6, 0.6)}


@dataclass
class SimConfig:
    """One simulated run; defaults are the paper's (Section IV-A)."""

    scheme: str = "selective"
    n: int = 40
    p: int | None = None  # default round(0.3 n)
    eta: float = 0.3
    theta: float = 1.0
    dt: float = 0.1  # the paper gives no default waiting slot; 0.1 s ~ a fifth of a round
    v_bytes: float = 500e6
    alpha: float = 1e-3
    bw_gbps: float = 20.0
    lam: float = 0.05
    horizon: float = 100.0
    trace: str = "cnn"
    ready_mode: str = "printed"
    warm: bool = True
    bw_error: float = 0.0
    c: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme: expected one of {SCHEMES}, got {self.scheme!r}")
        if self.trace not in TRACES:
            raise ValueError(f"trace: expected one of {sorted(TRACES)}, got {self.trace!r}")
        if self.ready_mode not in READY_MODES:
            raise ValueError(f"ready_mode: expected one of {READY_MODES}")
        if self.n < 1:
            raise ValueError(f"n: expected >= 1 workers, got {self.n}")
        if self.p is None:
            self.p = max(1, round(0.3 * self.n))
        if not 1 <= self.p <= self.n:
            raise ValueError(f"p: expected 1 <= p <= n={self.n}, got {self.p}")
        if not 0 < self.lam <= 1:
            raise ValueError(f"lam: expected 0 < lam <= 1, got {self.lam}")


@dataclass
class SimResult:
    """What the paper's Section IV-A metrics need, for one run."""

    config: SimConfig
    sync_times: list[float] = field(default_factory=list)
    sync_sizes: list[int] = field(default_factory=list)
    iterations: int = 0
    queue_wait: float = 0.0

    @property
    def avg_sync_time(self) -> float:
        return sum(self.sync_times) / len(self.sync_times) if self.sync_times else math.nan

    @property
    def avg_sync_scale(self) -> float:
        return sum(self.sync_sizes) / len(self.sync_sizes) if self.sync_sizes else math.nan

    def summary(self) -> dict[str, object]:
        """Flat row for tables and CSV."""
        return {**asdict(self.config), "avg_sync_time": self.avg_sync_time,
                "avg_sync_scale": self.avg_sync_scale, "total_sync": len(self.sync_times),
                "total_iteration": self.iterations,
                "avg_queue_wait": self.queue_wait / max(1, sum(self.sync_sizes))}


class FairShareNetwork:
    """Rings over worker edge links with max-min fair rates (progressive filling)."""

    def __init__(self, capacity: dict[Hashable, float]) -> None:
        self.capacity = capacity
        # ring id -> (links it uses, [bytes left per flow, rate])
        self.rings: dict[int, tuple[frozenset[Hashable], list[float]]] = {}
        self.clock = 0.0

    def advance(self, now: float) -> None:
        for _, state in self.rings.values():
            state[0] = max(0.0, state[0] - state[1] * (now - self.clock))
        self.clock = now

    def add(self, ring_id: int, links: frozenset[Hashable], size: float) -> None:
        self.rings[ring_id] = (links, [size, 0.0])
        self._allocate()

    def remove(self, ring_id: int) -> None:
        del self.rings[ring_id]
        self._allocate()

    def _allocate(self) -> None:
        left = {link: self.capacity[link] for r in self.rings.values() for link in r[0]}
        active = set(self.rings)
        for _, state in self.rings.values():
            state[1] = 0.0
        while active:
            users: dict[Hashable, int] = {}
            for r in active:
                for link in self.rings[r][0]:
                    users[link] = users.get(link, 0) + 1
            inc = min(left[link] / k for link, k in users.items())
            for r in active:
                self.rings[r][1][1] += inc
            for link, k in users.items():
                left[link] -= inc * k
            full = {link for link in users if left[link] <= 1e-9 * self.capacity[link]}
            active = {r for r in active if not self.rings[r][0] & full}

    def next_finish(self) -> tuple[float, int] | None:
        """(time, ring) of the earliest transfer completion, if any ring is active."""
        best = None
        for r, (_, (size, rate)) in self.rings.items():
            t = self.clock + (size / rate if rate > 0 else math.inf)
            if best is None or t < best[0]:
                best = (t, r)
        return best


def draw_bandwidths(cfg: SimConfig, rng: random.Random) -> list[float]:
    """round(20u, 3) Gb/s with u ~ U[lambda, 1], in bytes/s (Section IV-A)."""
    return [round(cfg.bw_gbps * rng.uniform(cfg.lam, 1.0), 3) * 1e9 / 8 for _ in range(cfg.n)]


def simulate(cfg: SimConfig) -> SimResult:
    """Run one configuration for cfg.horizon simulated seconds."""
    rng = random.Random(cfg.seed)
    median, sigma = TRACES[cfg.trace]
    mu = math.log(median)
    bw = draw_bandwidths(cfg, rng)
    estimate = {w: b * (1 + cfg.bw_error * rng.uniform(-1, 1)) for w, b in enumerate(bw)}
    compute_rng = random.Random(cfg.seed * 7919 + 1)
    workers = list(range(cfg.n))
    cdf = EmpiricalCDF(compute_rng.lognormvariate(mu, sigma) for _ in range(1000)) \
        if cfg.warm else EmpiricalCDF()
    ctl: BaseController = make_controller(
        cfg.scheme, workers, cfg.p or 1, **({} if cfg.scheme != "selective" else dict(
            eta=cfg.eta, theta=cfg.theta, dt=cfg.dt, v=cfg.v_bytes, bandwidth=lambda: estimate,
            cdf=cdf, ready_mode=cfg.ready_mode, c=cfg.c)))
    capacity: dict[Hashable, float] = {}
    for w, b in enumerate(bw):
        capacity[("up", w)] = b
        capacity[("down", w)] = b
    net = FairShareNetwork(capacity)
    result = SimResult(cfg)
    seq = itertools.count()
    events: list[tuple[float, int, str, object]] = []
    ring_ids = itertools.count()
    groups: dict[int, tuple[list[int], float]] = {}
    ready_at: dict[int, float] = {}
    net_version = [0]
    last_decision = [0.0]

    def push(t: float, kind: str, data: object) -> None:
        heapq.heappush(events, (t, next(seq), kind, data))

    def schedule_net() -> None:
        net_version[0] += 1
        nxt = net.next_finish()
        if nxt is not None:
            push(nxt[0], "transfer", (net_version[0], nxt[1]))

    def decide(now: float) -> None:
        last_decision[0] = now
        launched = ctl.decide(now)
        net.advance(now)
        for g in launched:
            rid = next(ring_ids)
            groups[rid] = (g, now)
            result.queue_wait += sum(now - ready_at.pop(w) for w in g)
            links = frozenset([("up", w) for w in g] + [("down", w) for w in g])
            net.add(rid, links, 2 * (len(g) - 1) / len(g) * cfg.v_bytes)
        if launched:
            schedule_net()
        if getattr(ctl, "holding", False):
            push(now + cfg.dt, "recheck", now)

    ctl.start(0.0)
    for w in workers:
        push(compute_rng.lognormvariate(mu, sigma), "ready", w)
    while events:
        now, _, kind, data = heapq.heappop(events)
        if now > cfg.horizon:
            break
        if kind == "ready":
            result.iterations += 1
            ready_at[data] = now  # type: ignore[index]
            ctl.ready(data, now)
            decide(now)
        elif kind == "recheck":
            if data == last_decision[0]:
                decide(now)
        elif kind == "transfer":
            version, rid = data  # type: ignore[misc]
            if version != net_version[0]:
                continue
            net.advance(now)
            net.remove(rid)
            schedule_net()
            g, _ = groups[rid]
            push(now + 2 * (len(g) - 1) * cfg.alpha, "sync_end", rid)
        elif kind == "sync_end":
            g, launched_at = groups.pop(data)  # type: ignore[call-overload]
            result.sync_times.append(now - launched_at)
            result.sync_sizes.append(len(g))
            ctl.sync_done(g, now)
            for w in g:
                push(now + compute_rng.lognormvariate(mu, sigma), "ready", w)
            decide(now)
    return result
