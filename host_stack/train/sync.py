"""How a worker turns its local gradient into the next parameters: the one seam between the
training loop and every synchronisation scheme (INA through PSs, ring, tree, RSGCM, selective).

INA moves the optimizer to the parameter servers (they return updated parameters); collectives
all-reduce the gradient and step a local optimizer.  Both fit ``GradientSync.step``.

No torch at import time: traffic-only (synthetic) workers and every PS import this module, and
``import torch`` costs ~230 MB per process (50 workers on one emulating machine: 11 GB).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    import torch

Vector = "np.ndarray | torch.Tensor"  # a flat float32 vector (see GradientSync.step)


@dataclass
class CommStats:
    """What one round put on the network from this worker: one row format for every scheme,
    so the training table's communication time and sending rate mean the same for all."""

    round: int
    comm_s: float  # time spent exchanging (not computing or stepping the optimizer)
    bytes: int  # bytes this worker sent in the round
    wire_bytes: int  # what that put on the worker's link: frames, headers and ACKs included


@dataclass
class RoundStats:
    """What one worker measured in one round (seconds)."""

    round: int
    loss: float
    compute_s: float
    sync_s: float
    # time.monotonic() when the sync began: one clock for every process of a machine, so a
    # launcher can tell the exchange itself (from the last worker's start) from the wait for
    # the other workers' compute
    sync_at: float = 0.0


class GradientSync(Protocol):
    """A synchronisation scheme as seen by one worker's training loop."""

    def step(self, round_: int, params: Vector, grad: Vector) -> Vector:
        """Return the parameters for the next round given this worker's flat gradient.

        Vectors are flat float32: torch tensors from the training loop, numpy arrays from a
        synthetic worker; the training loop takes either back (``torch.as_tensor``).
        """
        ...

    def close(self) -> None:
        """Release sockets, process groups and threads."""
        ...


class MeasuredSync(GradientSync, Protocol):
    """A scheme that records what each step sent: every ``--sync`` mode of the registry, so
    the worker can report the same communication columns for all of them."""

    history: list[CommStats]  # one entry per step, in order


class MomentumSGD:
    """SGD with momentum on a flat parameter vector (the same rule the INA PS applies).

    The velocity is a float32 numpy array, so the PS (``apply_rows``) needs no torch; ``apply``
    steps it in place through a torch view of the same memory.
    """

    def __init__(self, lr: float, momentum: float = 0.9) -> None:
        self.lr = lr
        self.momentum = momentum
        self.velocity: np.ndarray | None = None

    def apply(self, params: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """Return params - lr * v with v <- momentum * v + grad."""
        import torch  # callers hold torch tensors, so it is already loaded

        if self.velocity is None:
            self.velocity = np.zeros(tuple(grad.shape), np.float32)
        velocity = torch.from_numpy(self.velocity)
        velocity.mul_(self.momentum).add_(grad)
        return params - self.lr * velocity

    def apply_rows(self, params: np.ndarray, grad: np.ndarray, rows: np.ndarray) -> None:
        """The same rule, in place, on rows ``rows`` of a (chunks, N) float32 array.

        The INA PS updates each chunk as soon as its sum is complete (a batch of chunks at a
        time).  numpy, not torch: on a few hundred rows torch's per-call overhead dominated
        the PS's time; element-wise the float32 operations are those of ``apply``.
        """
        if self.velocity is None:
            self.velocity = np.zeros(params.size, np.float32)
        velocity = self.velocity.reshape(params.shape)
        v = velocity[rows]
        v *= np.float32(self.momentum)
        v += grad
        velocity[rows] = v
        params[rows] = params[rows] - np.float32(self.lr) * v


class AllReduceSync:
    """Average the gradient with an in-place sum all-reduce, then step a local optimizer.

    ``sent`` reads the running totals (payload, wire) of what the all-reduce's sends handed to
    the network; their growth over one all-reduce is the round's ``CommStats.bytes`` and
    ``wire_bytes``.
    """

    def __init__(self, all_reduce: Callable[[torch.Tensor], None], world_size: int,
                 optimizer: MomentumSGD, sent: Callable[[], tuple[int, int]]) -> None:
        self.all_reduce = all_reduce
        self.world_size = world_size
        self.optimizer = optimizer
        self.sent = sent
        self.history: list[CommStats] = []

    def step(self, round_: int, params: Vector, grad: Vector) -> torch.Tensor:
        import torch

        params = torch.as_tensor(params)  # a synthetic worker passes numpy arrays
        summed = torch.as_tensor(grad).clone()
        (payload, wire), t0 = self.sent(), time.perf_counter()
        self.all_reduce(summed)
        comm_s = time.perf_counter() - t0
        after_payload, after_wire = self.sent()
        self.history.append(CommStats(round_, comm_s, after_payload - payload, after_wire - wire))
        return self.optimizer.apply(params, summed / self.world_size)

    def close(self) -> None:
        return None
