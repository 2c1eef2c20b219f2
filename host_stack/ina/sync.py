"""INA as a GradientSync: the worker side of training through parameter servers.

``step`` quantizes the flat gradient, splits it into the plan's contiguous chunk ranges (one
per PS), exchanges them over the reliable transport and returns the updated parameters the PSs
sent back (RESULT = float32 parameters, see host_stack/ina/ps_apply.py).  The optimizer runs on the
PSs, so this worker keeps no optimizer state.

Registered as "ina" in host_stack/train/sync_registry.py; ``USES_PS`` tells the launcher to start
the PS processes.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from host_stack.ina.quantize import Quantizer, error_stats
from host_stack.ina.transport import WorkerTransport
from host_stack.train.jobargs import LAUNCHER_FLAGS, TRANSPORT_OPTIONS, Job
from host_stack.train.sync import CommStats, Vector

USES_PS = True
FLAGS = LAUNCHER_FLAGS | set(TRANSPORT_OPTIONS) | {"checkpoint_dir"}


@dataclass
class SyncRoundStats(CommStats):
    """Transport-side numbers of one round, for the launcher's report (bytes: frames)."""

    packets: int
    retx: int
    retx_spurious: int  # of ``retx``: the PS showed the original had arrived (transport.py)
    clipped: int
    quant_rel_error: float
    counters: dict[str, int] = field(default_factory=dict)
    version: int = 0  # the service's plan version this round ran on (0: a plan file)


class InaSync:
    """Gradient in, parameters out, through the PSs of a plan."""

    def __init__(self, transport: WorkerTransport, ranges: list[tuple[int, int]], n: int,
                 n_values: int, quantizer: Quantizer, follower: Follower | None = None) -> None:
        self.transport = transport
        self.follower = follower
        self.ranges = ranges
        self.n = n
        self.n_values = n_values
        self.n_chunks = -(-n_values // n)
        self.quantizer = quantizer
        self.history: list[SyncRoundStats] = []

    def step(self, round_: int, params: Vector, grad: Vector) -> np.ndarray:
        """numpy in and out, torch neither imported nor needed (synthetic workers)."""
        g = np.zeros(self.n_chunks * self.n, dtype=np.float32)
        g[:self.n_values] = np.asarray(grad)
        q, clipped = self.quantizer.quantize(g)
        err = error_stats(g, self.quantizer.dequantize(q))["rel_l2_error"]
        q = q.reshape(self.n_chunks, self.n)
        if self.follower is not None:
            self.transport = self.follower.transport_for(round_, self.transport)
        before = Counter(self.transport.counters)
        t0 = time.perf_counter()
        results = self.transport.exchange(round_, [q[a:b] for a, b in self.ranges])
        comm = time.perf_counter() - t0
        delta = Counter(self.transport.counters)
        delta.subtract(before)
        packets = delta["grad_sent"] + delta["retx_sent"]
        self.history.append(SyncRoundStats(
            round=round_, comm_s=comm, packets=packets, retx=delta["retx_sent"],
            retx_spurious=delta["retx_spurious"],
            bytes=packets * self.transport.bytes_per_packet(),
            wire_bytes=packets * self.transport.bytes_per_packet(), clipped=clipped,
            quant_rel_error=err, counters={k: v for k, v in delta.items() if v},
            version=self.follower.current.number if self.follower is not None else 0))
        words = np.concatenate(results) if results else np.zeros((0, self.n), np.int32)
        return words.view(np.float32).reshape(-1)[:self.n_values].copy()

    def close(self) -> None:
        self.transport.close()
        if self.follower is not None:
            self.follower.close()


def ps_links(plan, addresses, unit_bps: float | None) -> list:
    """The worker's view of the plan's PSs, in plan order: address and paced rate."""
    from host_stack.ina.transport import PsLink

    return [PsLink(ps, addresses[ps], plan.ps_rate_bps(ps, unit_bps)) for ps in plan.ps_ids]


class Follower:
    """Moves a worker to the plan version the service names for each round (follow.py)."""

    def __init__(self, link, job, worker: str, unit_bps: float | None) -> None:
        self.link, self.job, self.worker, self.unit_bps = link, job, worker, unit_bps
        self.first = self.current = link.for_round(0)

    def transport_for(self, round_: int, transport: WorkerTransport) -> WorkerTransport:
        """``transport``, or a new one on the same socket when ``round_`` runs on another
        version (counters carried over; HELLO checks the PSs serve it before the round)."""
        version = self.link.for_round(round_)
        if version.number == self.current.number:
            return transport
        version.check_follows(self.first, self.job.n_values, self.job.n)
        moved = WorkerTransport(transport.sock, version.plan.job,
                                version.plan.rank(self.worker),
                                ps_links(version.plan, version.addresses, self.unit_bps),
                                replace(transport.cfg, pool_size=version.pool_size))
        moved.counters.update(transport.counters)
        moved.counters["version_switches"] += 1
        moved.hello()
        self.current = version
        return moved

    def close(self) -> None:
        self.link.close()


def build(ctx) -> InaSync:
    """Registry hook: an InaSync for one worker of ``ctx`` (a WorkerContext)."""
    job, args = ctx.job, ctx.args
    plan = job.plan
    transport = connect_worker(job, ctx.worker, ctx.rank, args.unit_bps)
    follower = (Follower(ctx.service, job, ctx.worker, args.unit_bps)
                if ctx.service is not None else None)
    return InaSync(transport, [job.ranges[ps] for ps in plan.ps_ids], job.n, job.n_values,
                   job.quantizer, follower)


def connect_worker(job: Job, worker: str, rank: int, unit_bps: float | None
                   ) -> WorkerTransport:
    """A worker's transport to every PS of the job, on its address (and the job's RESULT
    group on loopback), with HELLO answered (clear error if not)."""
    from host_stack.ina.impair import wrap
    from host_stack.ina.result_group import join
    from host_stack.ina.transport import make_socket

    sock = wrap(make_socket(job.addresses[worker]), job.impairment)
    try:
        group = join(job.result_group) if job.result_group else None
    except OSError:
        sock.close()
        raise
    transport = WorkerTransport(sock, job.plan.job, rank,
                                ps_links(job.plan, job.addresses, unit_bps), job.transport,
                                group)
    transport.hello()
    return transport
