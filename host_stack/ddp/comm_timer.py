"""Timing a DDP job's communication: a hook that all-reduces each bucket on the group's own
backend, as DDP's default hook does, and keeps when each all-reduce started and ended.

    timer = inart.torch.CommTimer()
    ddp.register_comm_hook(timer, inart.torch.timed_allreduce)
    ...  # a step
    timer.busy()  # seconds with an all-reduce in flight, overlaps counted once
"""

# no ``from __future__ import annotations``: DDP checks the hook's annotations as objects
import time

import torch
import torch.distributed as dist
from torch.futures import Future


class CommTimer:
    """The all-reduce spans ``timed_allreduce`` recorded since the last ``busy``."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []

    def busy(self) -> float:
        """Seconds in which at least one all-reduce was in flight; clears the spans."""
        total, end = 0.0, float("-inf")
        for a, b in sorted(self.spans):
            total += max(0.0, b - max(a, end))
            end = max(end, b)
        self.spans.clear()
        return total


def timed_allreduce(timer: CommTimer, bucket: dist.GradBucket) -> Future[torch.Tensor]:  # noqa: UP037
    """Average one bucket over the group (divide, then SUM) and record its span."""
    start = time.perf_counter()
    buf = bucket.buffer().div_(dist.get_world_size())
    fut = dist.all_reduce(buf, async_op=True).get_future()

    def done(f: Future) -> torch.Tensor:
        timer.spans.append((start, time.perf_counter()))
        return f.value()[0]
    return fut.then(done)
