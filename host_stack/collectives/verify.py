"""Check a scheme against torch.distributed.all_reduce on the same random inputs."""

from __future__ import annotations

import torch
import torch.distributed as dist

from host_stack.collectives.schemes import SchemeConfig, bind


def compare_worker(rank: int, world: int, device: torch.device, configs: list[SchemeConfig],
                   sizes: list[int], seed: int = 0) -> dict[str, list[float]]:
    """Per scheme, the relative max error against all_reduce for each size (run per rank)."""
    fns = {c.scheme: bind(c, rank) for c in configs}
    errors: dict[str, list[float]] = {name: [] for name in fns}
    for n in sizes:
        gen = torch.Generator().manual_seed(seed * 7919 + rank * 104729 + n)
        x = torch.randn(n, generator=gen).to(device)
        ref = x.clone()
        dist.all_reduce(ref)
        scale = max(1.0, float(ref.abs().max())) if n else 1.0
        for name, fn in fns.items():
            y = x.clone()
            fn(y)
            errors[name].append(float((y - ref).abs().max()) / scale if n else 0.0)
    return errors
