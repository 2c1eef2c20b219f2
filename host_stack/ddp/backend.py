"""Joining a job from a user's script: the backend's creator, the hook's state, and the watch
on the launcher's abort file that ends a failed job on every worker with its named error."""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import torch.distributed as dist

from host_stack.ddp.allreduce import AgreeMax, ExactSum, InaAllReduce
from host_stack.ddp.engine_thread import EngineThread, InartBackendError
from host_stack.ddp.job_env import ABORT_VAR, connect, worker_job
from host_stack.ddp.process_group import InartProcessGroup

BACKEND = "inart"
_joined: list[str] = []  # one INA engine per process: it owns the worker's address


class InartJobAborted(InartBackendError):
    """Another process of the job failed; the launcher named it."""


def _engine_factory(rank: int, size: int):
    def make(agree: AgreeMax, exact: ExactSum) -> InaAllReduce:
        if _joined:
            raise InartBackendError(
                f"backend inart: this process already joined the job as {_joined[0]}; create "
                "further groups with backend='gloo'")
        wj = worker_job(rank, size)
        engine = InaAllReduce(wj.job, connect(wj), agree, exact)
        _joined.append(wj.worker)
        return engine
    return make


def create_process_group(store: dist.Store, rank: int, size: int,
                         timeout: timedelta) -> InartProcessGroup:
    """torch.distributed's creator for backend "inart"."""
    pg = InartProcessGroup(store, rank, size, timeout, _engine_factory(rank, size))
    watch_abort(pg.engine)
    return pg


def register() -> None:
    """Make ``dist.init_process_group("inart")`` (and "cpu:inart,cuda:nccl") known; idempotent."""
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, create_process_group, devices=["cpu"])


def engine_for_hook(group: dist.ProcessGroup | None = None) -> EngineThread:
    """An engine thread for the DDP hook of this process's worker, its control channel a
    new gloo group (every rank must call this at the same point, as with any new group)."""
    from host_stack.ddp.control import ControlGroup

    if not dist.is_initialized():
        raise InartBackendError("inart hook: call dist.init_process_group first (any backend)")
    rank, size = dist.get_rank(group), dist.get_world_size(group)
    control = ControlGroup(dist.new_group(backend="gloo"))
    thread = EngineThread(_engine_factory(rank, size)(control.agree_max, control.exact_sum),
                          size)
    watch_abort(thread)
    return thread


def watch_abort(engine: EngineThread, poll_s: float = 0.2) -> None:
    """When the launcher writes the abort file (another process failed), fail this worker's
    all-reduces with its text and say so on stderr, instead of waiting on a dead peer."""
    path = os.environ.get(ABORT_VAR)
    if not path:
        return

    def watch() -> None:
        while not Path(path).exists():
            time.sleep(poll_s)
        reason = Path(path).read_text().strip() or "the job failed"
        print(f"inart: job aborted: {reason}", file=sys.stderr, flush=True)
        engine.abort(InartJobAborted(f"job aborted: {reason}"))

    threading.Thread(target=watch, name="inart-abort-watch", daemon=True).start()
