"""Run a found schedule with torch.distributed: every ring becomes one all_reduce on a process
group of its devices (the paper's realistic environment: one ncclAllReduce per ring).  The
rings of a step run at once (async), each on its block of the buffer.

Every rank must build the executor with the same schedule: ``new_group`` is collective over
the whole world, so groups are created for all rings in one fixed order.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import torch
import torch.distributed as dist

from host_stack.collectives.p2p import all_reduce
from host_stack.collectives.rsgcm.env import Schedule


class ScheduleExecutor:
    """A schedule bound to ranks: device d of the schedule runs on rank ``ranks[d_index]``."""

    def __init__(self, schedule: Schedule, ranks: Sequence[int] | None = None,
                 timeout_s: float = 60.0) -> None:
        devices = schedule.devices
        ranks = list(range(len(devices))) if ranks is None else list(ranks)
        if len(ranks) != len(devices) or len(set(ranks)) != len(ranks):
            raise ValueError(f"ranks: expected {len(devices)} distinct ranks for devices "
                             f"{devices}, got {ranks}")
        if len(devices) > dist.get_world_size():
            raise ValueError(f"schedule: needs {len(devices)} ranks, the world has "
                             f"{dist.get_world_size()}")
        self.schedule = schedule
        self.timeout = timedelta(seconds=timeout_s)
        self.rank_of = dict(zip(devices, ranks, strict=True))
        self.groups: dict[tuple[int, ...], dist.ProcessGroup | None] = {}
        for step in schedule.steps:
            for ring, _ in step.rings:
                members = tuple(sorted(self.rank_of[d] for d in ring))
                if members not in self.groups:
                    self.groups[members] = dist.new_group(list(members),
                                                          timeout=self.timeout)

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` in place over the schedule's devices."""
        if not tensor.is_contiguous():
            raise ValueError("tensor: expected a contiguous tensor (blocks are flat views)")
        me = dist.get_rank()
        blocks = torch.tensor_split(tensor.view(-1), self.schedule.nblocks)
        for step in self.schedule.steps:
            works = []
            for ring, b in step.rings:
                members = tuple(sorted(self.rank_of[d] for d in ring))
                if me in members and blocks[b].numel():
                    works.append(all_reduce(blocks[b], group=self.groups[members],
                                            async_op=True))
            for w in works:
                w.wait(timeout=self.timeout)
        return tensor
