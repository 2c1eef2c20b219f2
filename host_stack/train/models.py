"""Models trained by the testbed; small enough for CPU runs, real enough to show convergence."""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    """Two hidden layers over flattened 8x8 digits (or any flat input)."""

    def __init__(self, in_features: int = 64, classes: int = 10, hidden: int = 128) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(in_features, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SmallCNN(nn.Module):
    """Two conv layers for 1x8x8 digits images."""

    def __init__(self, classes: int = 10, width: int = 16) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * width * 4 * 4, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x.view(-1, 1, 8, 8)))


MODELS = {"mlp": MLP, "cnn": SmallCNN}


def build_model(name: str, seed: int = 0) -> nn.Module:
    """Instantiate a model by name with deterministic initial weights."""
    if name not in MODELS:
        raise ValueError(f"model '{name}': expected one of {sorted(MODELS)}")
    torch.manual_seed(seed)
    return MODELS[name]()


def flat_params(model: nn.Module) -> torch.Tensor:
    """All parameters as one flat float32 vector (a copy)."""
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def flat_grads(model: nn.Module) -> torch.Tensor:
    """All gradients as one flat float32 vector (zeros where a gradient is missing)."""
    return torch.cat([
        (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
        for p in model.parameters()
    ])


def load_flat_params(model: nn.Module, flat: torch.Tensor) -> None:
    """Copy a flat vector back into the model's parameters."""
    offset = 0
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
    if offset != flat.numel():
        raise ValueError(f"flat parameter vector has {flat.numel()} values, model has {offset}")
