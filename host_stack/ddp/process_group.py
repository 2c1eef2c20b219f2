"""The "inart" torch.distributed backend: all_reduce through the plan's switches and PSs,
every other collective through a gloo group it keeps.

A Python ``ProcessGroup`` (torch's own trampoline): ``allreduce`` and ``allreduce_coalesced``
are served here; gloo is registered as the group's CPU backend, so broadcast, barrier,
all_gather, reduce_scatter and the rest reach it without the user asking.  All-reduces return
a ``Work`` at once whose future completes when the sum is in (engine_thread.py): DDP keeps
computing gradients while earlier buckets are on the wire.

What INA carries: SUM and AVG of float32, float16, bfloat16 and int32 tensors of any shape
(16-bit floats summed as float32, then rounded once).  MAX, MIN and PRODUCT, and SUM/AVG of
other dtypes gloo sums (float64, int64, int8, uint8), go to the gloo group and are counted
(``gloo_calls``); anything gloo cannot reduce either is refused with the op or dtype named.
CUDA tensors are staged through pinned host memory.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.futures import Future

from host_stack.ddp.allreduce import AgreeMax, ExactSum, InaAllReduce
from host_stack.ddp.control import ControlGroup
from host_stack.ddp.engine_thread import EngineThread, InartBackendError

INA_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32)
GLOO_DTYPES = (torch.float64, torch.int64, torch.int8, torch.uint8)
INA_OPS = ("SUM", "AVG")
GLOO_OPS = ("MAX", "MIN", "PRODUCT")

EngineFactory = Callable[[AgreeMax, ExactSum], InaAllReduce]


def op_name(op: dist.ReduceOp) -> str:
    """The ReduceOp's name (ReduceOp objects compare equal to their RedOpType)."""
    for name in (*INA_OPS, *GLOO_OPS, "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        if op == getattr(dist.ReduceOp, name):
            return name
    return str(op)


def route(tensors: list[torch.Tensor], op: str) -> str:
    """"ina" or "gloo" for an all-reduce of ``tensors`` with ``op``; InartBackendError for
    what neither carries."""
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) != 1:
        raise InartBackendError(f"all_reduce: expected tensors of one dtype, got "
                                f"{', '.join(sorted(map(str, dtypes))) or 'none'}")
    dtype = dtypes.pop()
    if op in INA_OPS and dtype in INA_DTYPES:
        return "ina"
    if op in (*INA_OPS, *GLOO_OPS) and dtype in (*INA_DTYPES, *GLOO_DTYPES):
        return "gloo"
    raise InartBackendError(
        f"all_reduce: op {op} on {dtype} is carried by neither INA (SUM/AVG of "
        f"{', '.join(map(str, INA_DTYPES))}) nor its gloo group (also MAX/MIN/PRODUCT and "
        f"{', '.join(map(str, GLOO_DTYPES))})")


class InartWork(dist._Work):
    """An all-reduce in flight: ``wait`` blocks, ``get_future`` is DDP's handle on it."""

    def __init__(self, future: Future) -> None:
        super().__init__()
        self.future = future

    def wait(self, timeout: timedelta | None = None) -> bool:
        self.future.wait()  # raises the call's error
        return True

    def is_completed(self) -> bool:
        return self.future.done()

    def get_future(self) -> Future:
        return self.future


class InartProcessGroup(dist.ProcessGroup):
    """One worker's group: the INA engine's thread plus two gloo groups (the user's
    collectives, and the engine's scale agreement, kept apart so that their calls never
    interleave differently on different ranks)."""

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta,
                 engine_factory: EngineFactory) -> None:
        super().__init__(rank, size)
        self.gloo = dist.ProcessGroupGloo(dist.PrefixStore("user", store), rank, size, timeout)
        self._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO,
                               self.gloo)
        self._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
        control = ControlGroup(dist.ProcessGroupGloo(dist.PrefixStore("control", store), rank,
                                                     size, timeout))
        self.engine = EngineThread(engine_factory(control.agree_max, control.exact_sum), size)
        self.gloo_calls = 0

    def getBackendName(self) -> str:
        return "inart"

    def allreduce(self, tensors, opts=None) -> dist._Work:
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        return self._submit(list(tensors), op_name(opts.reduceOp) if opts else "SUM")

    def allreduce_coalesced(self, tensors, opts=None) -> dist._Work:
        return self._submit(list(tensors), op_name(opts.reduceOp) if opts else "SUM")

    def _submit(self, tensors: list[torch.Tensor], op: str) -> dist._Work:
        if route(tensors, op) == "ina":
            return InartWork(self.engine.submit(tensors, op))
        self.gloo_calls += 1
        opts = dist.AllreduceOptions()
        opts.reduceOp = getattr(dist.ReduceOp, "SUM" if op == "AVG" else op)
        work = self.gloo.allreduce(tensors, opts)
        if op != "AVG":
            return work
        work.wait()
        for t in tensors:
            if t.is_floating_point():
                t.div_(self.size())
            else:
                t.floor_divide_(self.size())
        future: Future = Future()
        future.set_result(tensors)
        return InartWork(future)

    def stats(self) -> dict[str, float]:
        return {**self.engine.stats(), "gloo_calls": self.gloo_calls}


# The collectives INA does not carry, handed to the gloo group from Python.  Left to torch's
# trampoline, they reach gloo through ProcessGroup's C++ path with the GIL held, and a gloo
# barrier then waited (1 run in about 25) on a lock whose holder, a gloo thread, waited for the
# GIL: every rank hung in dist.barrier().  ProcessGroupGloo's own Python methods release the
# GIL first.
GLOO_CALLS = ("barrier", "broadcast", "allgather", "_allgather_base", "gather", "scatter",
              "reduce", "reduce_scatter", "alltoall_base", "send", "recv")


def _to_gloo(name: str):
    def call(self: InartProcessGroup, *args, **kwargs):
        return getattr(self.gloo, name)(*args, **kwargs)
    call.__name__ = name
    return call


for _name in GLOO_CALLS:
    setattr(InartProcessGroup, _name, _to_gloo(_name))
