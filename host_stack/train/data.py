"""Training data with no downloads: scikit-learn's bundled digits, and synthetic sets."""

from __future__ import annotations

import numpy as np
import torch


def digits(test_fraction: float = 0.25, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """(x_train, y_train, x_test, y_test) of the 8x8 digits, scaled to [0, 1], seeded split."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = torch.tensor(bunch.data / 16.0, dtype=torch.float32)
    y = torch.tensor(bunch.target, dtype=torch.long)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    n_test = int(len(x) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def shard(x: torch.Tensor, y: torch.Tensor, rank: int, world: int) -> tuple[torch.Tensor, ...]:
    """The rank-th of `world` interleaved shards (every worker sees a similar class mix)."""
    return x[rank::world], y[rank::world]


def synthetic_gradients(size: int, workers: int, seed: int = 0) -> np.ndarray:
    """(workers, size) float32 gradients with a known sum, for throughput and checks."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((workers, size), dtype=np.float32)
