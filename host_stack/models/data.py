"""Data that installs with the packages or is generated: nothing is downloaded.

- ``digits``: scikit-learn's 8x8 handwritten digits (1,797 images, 10 classes), upsampled to
  32x32 and repeated to 3 channels for image models, split 80/20 by a fixed seed;
- ``copy_task``: token sequences whose second half repeats the first, a task a small GPT
  learns in a few hundred steps (next-token accuracy on the second half).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def digits(size: int = 32, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """(train_x, train_y, test_x, test_y): float images (N, 3, size, size) in [0, 1]."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32).view(-1, 1, 8, 8) / 16.0
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False).repeat(
        1, 3, 1, 1)
    y = torch.tensor(d.target, dtype=torch.long)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    cut = int(0.8 * len(y))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def copy_task(batch: int, context: int, vocab: int, generator: torch.Generator
              ) -> torch.Tensor:
    """(batch, context) tokens: random first half, copied into the second half."""
    half = context // 2
    first = torch.randint(1, vocab, (batch, half), generator=generator)
    return torch.cat([first, first], dim=1)[:, :context]
