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
from dataclasses import dataclass, field

import numpy as np
import torch

from host_stack.ina.quantize import Quantizer, error_stats
from host_stack.ina.transport import WorkerTransport
from host_stack.train.jobargs import LAUNCHER_FLAGS, TRANSPORT_OPTIONS
from host_stack.train.sync import CommStats

USES_PS = True
FLAGS = LAUNCHER_FLAGS | set(TRANSPORT_OPTIONS) | {"checkpoint_dir"}


@dataclass
class SyncRoundStats(CommStats):
    """Transport-side numbers of one round, for the launcher's report (bytes: frames)."""

    packets: int
    retx: int
    clipped: int
    quant_rel_error: float
    counters: dict[str, int] = field(default_factory=dict)


class InaSync:
    """Gradient in, parameters out, through the PSs of a plan."""

    def __init__(self, transport: WorkerTransport, ranges: list[tuple[int, int]], n: int,
                 n_values: int, quantizer: Quantizer) -> None:
        self.transport = transport
        self.ranges = ranges
        self.n = n
        self.n_values = n_values
        self.n_chunks = -(-n_values // n)
        self.quantizer = quantizer
        self.history: list[SyncRoundStats] = []

    def step(self, round_: int, params: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        g = np.zeros(self.n_chunks * self.n, dtype=np.float32)
        g[:self.n_values] = grad.detach().numpy()
        q, clipped = self.quantizer.quantize(g)
        err = error_stats(g, self.quantizer.dequantize(q))["rel_l2_error"]
        q = q.reshape(self.n_chunks, self.n)
        before = Counter(self.transport.counters)
        t0 = time.perf_counter()
        results = self.transport.exchange(round_, [q[a:b] for a, b in self.ranges])
        comm = time.perf_counter() - t0
        delta = Counter(self.transport.counters)
        delta.subtract(before)
        packets = delta["grad_sent"] + delta["retx_sent"]
        self.history.append(SyncRoundStats(
            round=round_, comm_s=comm, packets=packets, retx=delta["retx_sent"],
            bytes=packets * self.transport.bytes_per_packet(), clipped=clipped,
            quant_rel_error=err, counters={k: v for k, v in delta.items() if v}))
        words = np.concatenate(results) if results else np.zeros((0, self.n), np.int32)
        return torch.from_numpy(words.view(np.float32).reshape(-1)[:self.n_values].copy())

    def close(self) -> None:
        self.transport.close()


def build(ctx) -> InaSync:
    """Registry hook: an InaSync for one worker of ``ctx`` (a WorkerContext)."""
    from host_stack.ina.impair import wrap
    from host_stack.ina.transport import PsLink, make_socket

    job, args = ctx.job, ctx.args
    plan = job.plan
    links = [PsLink(ps, job.addresses[ps], plan.ps_rate_bps(ps, args.unit_bps))
             for ps in plan.ps_ids]
    sock = wrap(make_socket(job.addresses[ctx.worker]), job.impairment)
    transport = WorkerTransport(sock, plan.job, ctx.rank, links, job.transport)
    transport.hello()
    return InaSync(transport, [job.ranges[ps] for ps in plan.ps_ids], job.n, job.n_values,
                   job.quantizer)
