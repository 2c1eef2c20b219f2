"""The all-reduce engine on a thread of its own: tensors in, a future out at once.

Shared by the backend (process_group.py) and the DDP hook (hook.py): calls run one at a
time, in submission order (the round numbers every worker must agree on), while the caller's
thread goes on computing gradients.  A failed call fails every later one with its error, so
a job whose PS or peer is gone ends on every worker instead of hanging.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter

import torch
from torch.futures import Future

from host_stack.ddp.allreduce import InaAllReduce


class InartBackendError(RuntimeError):
    """The backend cannot carry a call, or the job it belongs to failed."""


class EngineThread:
    """Runs SUM/AVG all-reduces of float32/16-bit float/int32 tensors through an engine."""

    def __init__(self, engine: InaAllReduce, world_size: int) -> None:
        self.engine = engine
        self.world_size = world_size
        self.counters: Counter[str] = Counter()
        self.failure: BaseException | None = None
        self.calls: queue.Queue[tuple[list[torch.Tensor], str, Future] | None] = queue.Queue()
        self.thread = threading.Thread(target=self._serve, name="inart-allreduce", daemon=True)
        self.thread.start()

    def submit(self, tensors: list[torch.Tensor], op: str) -> Future:
        """A future of ``tensors`` summed (``op`` "SUM") or averaged ("AVG") in place."""
        future: Future = Future()
        if self.failure is not None:
            future.set_exception(self._failed())
        else:
            self.calls.put((tensors, op, future))
        return future

    def _failed(self) -> InartBackendError:
        return InartBackendError(f"inart backend: an earlier all_reduce failed: {self.failure}")

    def _serve(self) -> None:
        while (call := self.calls.get()) is not None:
            tensors, op, future = call
            if self.failure is not None:
                future.set_exception(self._failed())
                continue
            try:
                self._reduce(tensors, op)
            except BaseException as exc:  # noqa: BLE001 (handed to the caller's future)
                self.failure = self.failure or exc
                future.set_exception(exc if self.failure is exc else self._failed())
                continue
            future.set_result(tensors)

    def _reduce(self, tensors: list[torch.Tensor], op: str) -> None:
        """Sum ``tensors`` (one dtype) over all workers in place, as one flat vector."""
        dtype = tensors[0].dtype
        wire = torch.int32 if dtype == torch.int32 else torch.float32
        in_place = len(tensors) == 1 and tensors[0].device.type == "cpu" and dtype == wire \
            and tensors[0].is_contiguous()
        if in_place:
            flat = tensors[0].detach().reshape(-1)
        else:
            flat = torch.cat([t.detach().reshape(-1).to("cpu", wire) for t in tensors])
        values = flat.numpy()
        if wire == torch.int32:
            self.engine.sum_int32(values, out=values)
        else:
            self.engine.sum_float(values, out=values)
        if op == "AVG":
            if wire == torch.float32:
                flat.div_(self.world_size)
            else:
                flat.div_(self.world_size, rounding_mode="floor")
        if not in_place:
            start = 0
            for t in tensors:
                part = flat[start:start + t.numel()].view(t.shape)
                start += t.numel()
                t.copy_(part if t.device.type == "cpu" else part.pin_memory())
        self.counters["ina_calls"] += 1

    def abort(self, reason: BaseException) -> None:
        """Fail what is queued and everything after with ``reason`` (a job's named error);
        closing the socket ends a round in flight."""
        self.failure = reason
        self.engine.transport.close()

    def shutdown(self) -> None:
        """Finish the queued calls, then close the engine's socket."""
        self.calls.put(None)
        self.thread.join(timeout=60)
        self.engine.close()

    def stats(self) -> dict[str, float]:
        """INA calls, rounds and chunks, the summed error bound of its float calls
        (``ina_error_bound_sum``) and the transport's counters (resends, their causes)."""
        return {**self.counters, **{f"ina_{k}": v for k, v in self.engine.counters.items()},
                "ina_error_bound_sum": self.engine.bound_sum,
                **{f"transport_{k}": v for k, v in self.engine.transport.counters.items()}}
