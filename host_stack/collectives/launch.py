"""Run one function in W local processes that share a torch.distributed process group.

Why not ``torch.multiprocessing.spawn``: we need every wait bounded (init, each op, the whole
run) and the processes' return values.  Processes come from a forkserver that has already
imported torch, so starting 8 of them on a 2-core machine costs well under a second each.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from control_plane.localhost import free_port

BACKENDS = ("gloo", "nccl")


class LaunchError(RuntimeError):
    """A worker failed or the run timed out; the message carries the worker's traceback."""


def check_backend(backend: str) -> None:
    """Reject unknown backends and NCCL without CUDA, naming the field."""
    if backend not in BACKENDS:
        raise ValueError(f"backend '{backend}': expected one of {BACKENDS}")
    if backend == "nccl" and not torch.cuda.is_available():
        raise ValueError("backend 'nccl': needs CUDA devices, none is available here")


def init_process_group(rank: int, world: int, port: int, backend: str = "gloo",
                       op_timeout_s: float = 60.0) -> torch.device:
    """Join a process group on 127.0.0.1:port; the timeout bounds init and every collective.

    Returns the device tensors should live on (cuda:rank%n for NCCL, cpu for gloo).
    """
    check_backend(backend)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=op_timeout_s))
    return device


def _worker(fn: Callable[..., Any], rank: int, world: int, port: int, backend: str,
            op_timeout_s: float, args: tuple, out: mp.Queue) -> None:
    torch.set_num_threads(1)
    try:
        device = init_process_group(rank, world, port, backend, op_timeout_s)
        result = fn(rank, world, device, *args)
        out.put((rank, True, result))
    except BaseException:  # report every failure to the parent instead of hanging it
        out.put((rank, False, traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _context() -> mp.context.BaseContext:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed", "host_stack.collectives.launch"])
    return ctx


def run_processes(fn: Callable[..., Any], world: int, args: tuple = (), backend: str = "gloo",
                  timeout_s: float = 300.0, op_timeout_s: float = 60.0) -> list[Any]:
    """Call ``fn(rank, world, device, *args)`` in ``world`` processes; return results by rank.

    ``fn`` must be importable (module level).  Raises LaunchError with the first worker's
    traceback, or when the whole run exceeds ``timeout_s``; stragglers are terminated.
    """
    if not isinstance(world, int) or world < 1:
        raise ValueError(f"world: expected a positive integer, got {world!r}")
    check_backend(backend)
    ctx = _context()
    out: mp.Queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_worker, daemon=True,
                         args=(fn, r, world, port, backend, op_timeout_s, args, out))
             for r in range(world)]
    for p in procs:
        p.start()
    results: dict[int, Any] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(results) < world:
            try:
                rank, ok, value = out.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty as exc:
                raise LaunchError(f"run of {world} processes exceeded {timeout_s} s") from exc
            if not ok:
                raise LaunchError(f"rank {rank} failed:\n{value}")
            results[rank] = value
    finally:
        reap(procs)
    return [results[r] for r in range(world)]


def reap(procs: list[mp.process.BaseProcess]) -> None:
    """Join every process, killing one still alive after 10 s: a run never leaves one behind,
    also when it failed half-way."""
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)
