"""How a worker turns its local gradient into the next parameters: the one seam between the
training loop and every synchronisation scheme (INA through PSs, ring, tree, RSGCM, selective).

INA moves the optimizer to the parameter servers (they return updated parameters); collectives
all-reduce the gradient and step a local optimizer.  Both fit ``GradientSync.step``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch


@dataclass
class CommStats:
    """What one round put on the network from this worker: one row format for every scheme,
    so the training table's communication time and sending rate mean the same for all."""

    round: int
    comm_s: float  # time spent exchanging (not computing or stepping the optimizer)
    bytes: int  # bytes this worker sent in the round


class GradientSync(Protocol):
    """A synchronisation scheme as seen by one worker's training loop."""

    def step(self, round_: int, params: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """Return the parameters for the next round given this worker's flat gradient."""
        ...

    def close(self) -> None:
        """Release sockets, process groups and threads."""
        ...


class MeasuredSync(GradientSync, Protocol):
    """A scheme that records what each step sent: every ``--sync`` mode of the registry, so
    the worker can report the same communication columns for all of them."""

    history: list[CommStats]  # one entry per step, in order


class MomentumSGD:
    """SGD with momentum on a flat parameter vector (the same rule the INA PS applies)."""

    def __init__(self, lr: float, momentum: float = 0.9) -> None:
        self.lr = lr
        self.momentum = momentum
        self.velocity: torch.Tensor | None = None

    def apply(self, params: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """Return params - lr * v with v <- momentum * v + grad."""
        if self.velocity is None:
            self.velocity = torch.zeros_like(grad)
        self.velocity.mul_(self.momentum).add_(grad)
        return params - self.lr * self.velocity

    def apply_range(self, params: torch.Tensor, grad: torch.Tensor, start: int) -> None:
        """The same rule, in place, on params[start:start+len(grad)] only.

        The INA PS updates each chunk as soon as its sum is complete; element-wise this gives
        bit-for-bit the values ``apply`` would give on the whole vector.
        """
        if self.velocity is None:
            self.velocity = torch.zeros_like(params)
        end = start + grad.numel()
        v = self.velocity[start:end]
        v.mul_(self.momentum).add_(grad)
        params[start:end] = params[start:end] - self.lr * v


class AllReduceSync:
    """Average the gradient with an in-place sum all-reduce, then step a local optimizer.

    ``sent`` reads the running total of bytes the all-reduce's sends handed to the network;
    its growth over one all-reduce is the round's ``CommStats.bytes``.
    """

    def __init__(self, all_reduce: Callable[[torch.Tensor], None], world_size: int,
                 optimizer: MomentumSGD, sent: Callable[[], int]) -> None:
        self.all_reduce = all_reduce
        self.world_size = world_size
        self.optimizer = optimizer
        self.sent = sent
        self.history: list[CommStats] = []

    def step(self, round_: int, params: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        summed = grad.clone()
        before, t0 = self.sent(), time.perf_counter()
        self.all_reduce(summed)
        self.history.append(CommStats(round_, time.perf_counter() - t0, self.sent() - before))
        return self.optimizer.apply(params, summed / self.world_size)

    def close(self) -> None:
        return None
