"""`--sync ring|tree|rsgcm|torch`: the collectives as schemes of the shared training launcher.

Workers only (no PS processes): each worker joins a gloo process group at INART_DIST_INIT
(``tcp://HOST:PORT``; `inart train` sets it to a free loopback port, a multi-host run sets it
to rank 0's address), averages gradients with the chosen collective and steps a local
MomentumSGD, the same rule the INA PSs apply.  RAT trees follow the plan's topology.
"""

from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist

from host_stack.collectives.sync import make_sync
from host_stack.train.jobargs import LAUNCHER_FLAGS
from host_stack.train.sync import MeasuredSync

USES_PS = False
FLAGS = LAUNCHER_FLAGS  # no transport options: gloo carries the data
INIT_ENV = "INART_DIST_INIT"


class _ProcessGroupSync:
    """A collective GradientSync that also tears its process group down."""

    def __init__(self, inner: MeasuredSync) -> None:
        self.inner = inner
        self.history = inner.history

    def step(self, round_: int, params: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        return self.inner.step(round_, params, grad)

    def close(self) -> None:
        self.inner.close()
        if dist.is_initialized():
            dist.destroy_process_group()


def build(ctx) -> MeasuredSync:
    """Join the job's process group and return the rank's collective sync."""
    init = os.environ.get(INIT_ENV)
    if not init:
        raise ValueError(f"--sync {ctx.args.sync}: set {INIT_ENV}=tcp://HOST:PORT "
                         "(inart train does it for loopback runs)")
    world = len(ctx.job.plan.worker_ids)
    dist.init_process_group("gloo", init_method=init, rank=ctx.rank, world_size=world,
                            timeout=timedelta(seconds=120))
    extra = {}
    if ctx.args.sync == "tree":
        # the trees' rank i is the plan's worker i, as in init_process_group above
        extra["topology"] = ctx.job.plan.topology.graph
        extra["workers"] = ctx.job.plan.worker_ids
    sync = make_sync(ctx.args.sync, ctx.rank, world, lr=ctx.args.lr,
                     momentum=ctx.args.momentum, **extra)
    return _ProcessGroupSync(sync)
