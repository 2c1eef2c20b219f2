"""The per-worker training loop shared by every synchronisation scheme.

A worker draws minibatches from its shard, computes a flat gradient, hands it to a
``GradientSync`` and loads the parameters it gets back.  Keeping one loop for INA, ring, tree,
RSGCM and selective reduce means their accuracy and timing differ only by the scheme.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import nn

from host_stack.train.models import flat_grads, flat_params, load_flat_params
from host_stack.train.sync import GradientSync, RoundStats


def batches(n: int, batch_size: int, rounds: int, seed: int) -> list[torch.Tensor]:
    """Index batches for `rounds` rounds over n samples, reshuffled every epoch, seeded."""
    gen = torch.Generator().manual_seed(seed)
    out: list[torch.Tensor] = []
    order = torch.randperm(n, generator=gen)
    pos = 0
    while len(out) < rounds:
        if pos + batch_size > n:
            order, pos = torch.randperm(n, generator=gen), 0
        out.append(order[pos:pos + batch_size])
        pos += batch_size
    return out


def train_worker(model: nn.Module, x: torch.Tensor, y: torch.Tensor, sync: GradientSync,
                 rounds: int, batch_size: int, seed: int = 0,
                 on_round: Callable[[RoundStats], None] | None = None) -> list[RoundStats]:
    """Run `rounds` synchronous rounds on this worker's shard; returns per-round stats.

    ``on_round`` sees each round's stats as soon as it ends (progress bars, live reports).
    """
    loss_fn = nn.CrossEntropyLoss()
    params = flat_params(model)
    stats: list[RoundStats] = []
    for r, idx in enumerate(batches(len(x), batch_size, rounds, seed)):
        t0 = time.perf_counter()
        model.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        grad = flat_grads(model)
        t1, at = time.perf_counter(), time.monotonic()
        params = torch.as_tensor(sync.step(r, params, grad))  # INA returns a numpy array
        load_flat_params(model, params)
        t2 = time.perf_counter()
        stats.append(RoundStats(r, float(loss.detach()), t1 - t0, t2 - t1, at))
        if on_round is not None:
            on_round(stats[-1])
    return stats


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Top-1 accuracy in [0, 1]."""
    return float((model(x).argmax(dim=1) == y).float().mean())
