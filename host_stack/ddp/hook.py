"""The DDP communication hook: gradient buckets through INA, everything else on the user's
own backend (gloo, or NCCL on GPUs).

    state = inart.torch.hook_state()
    ddp.register_comm_hook(state, inart.torch.inart_hook)

Like DDP's default all-reduce, each bucket is divided by the world size and summed, so the
parameters match a run without the hook (within the INA error bound, host_stack/ddp/allreduce.py).
"""

# no ``from __future__ import annotations``: DDP checks the hook's annotations as objects
import torch
import torch.distributed as dist
from torch.futures import Future

from host_stack.ddp.engine_thread import EngineThread


def inart_hook(state: EngineThread, bucket: dist.GradBucket) -> Future[torch.Tensor]:  # noqa: UP037
    """Average one gradient bucket over the workers through the plan's PSs and switches."""
    buffer = bucket.buffer()
    buffer.div_(state.world_size)
    return state.submit([buffer], "SUM").then(lambda fut: fut.value()[0])
