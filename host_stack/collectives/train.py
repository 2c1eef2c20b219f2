"""Train the INA host stack's models over a collective: W local processes, one shard each.

Metrics match the INA runs: per round the slowest rank's round time and sync (communication +
optimizer) time and the mean loss, then test accuracy; we also check that every rank ends with
the same parameters (the collectives must keep replicas identical).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict
from typing import Any

import networkx as nx
import numpy as np
import torch

from host_stack.collectives.launch import run_processes
from host_stack.collectives.schemes import SchemeConfig, prepare
from host_stack.collectives.sync import make_sync
from host_stack.train.data import digits, shard
from host_stack.train.loop import accuracy, train_worker
from host_stack.train.models import build_model, flat_params


def _worker(rank: int, world: int, device: torch.device, cfg: SchemeConfig, model_name: str,
            rounds: int, batch_size: int, lr: float, seed: int) -> dict[str, Any]:
    x_tr, y_tr, x_te, y_te = digits(seed=seed)
    xs, ys = shard(x_tr, y_tr, rank, world)
    model = build_model(model_name, seed).to(device)
    sync = make_sync(cfg, rank, world, lr)
    try:
        stats = train_worker(model, xs.to(device), ys.to(device), sync, rounds, batch_size,
                             seed=seed + rank)
    finally:
        sync.close()
    return {"rounds": [asdict(s) for s in stats],
            "accuracy": accuracy(model, x_te.to(device), y_te.to(device)),
            "params": flat_params(model).cpu().numpy()}  # numpy: tensors would go by shm fd


def train_collective(scheme: str, model_name: str = "mlp", world: int = 4, rounds: int = 100,
                     batch_size: int = 32, lr: float = 0.05, seed: int = 0,
                     topology: nx.Graph | None = None, backend: str = "gloo",
                     timeout_s: float = 900.0) -> dict[str, Any]:
    """Run data-parallel training with ``scheme`` and return the metrics as plain data."""
    for name, value in (("rounds", rounds), ("batch_size", batch_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    if lr <= 0:
        raise ValueError(f"lr: expected > 0, got {lr}")
    cfg = prepare(scheme, world, topology=topology, seed=seed)
    res = run_processes(_worker, world, args=(cfg, model_name, rounds, batch_size, lr, seed),
                        backend=backend, timeout_s=timeout_s)
    per_round = []
    for r in range(rounds):
        ranks = [x["rounds"][r] for x in res]
        per_round.append({
            "round": r,
            "loss": statistics.fmean(s["loss"] for s in ranks),
            "round_s": max(s["compute_s"] + s["sync_s"] for s in ranks),
            "comm_s": max(s["sync_s"] for s in ranks),
        })
    drift = max(float(np.abs(x["params"] - res[0]["params"]).max()) for x in res)
    return {
        "scheme": scheme, "model": model_name, "world": world, "rounds": rounds,
        "batch_size": batch_size, "lr": lr, "seed": seed, "backend": backend,
        "accuracy": res[0]["accuracy"],
        "mean_round_s": statistics.fmean(p["round_s"] for p in per_round),
        "mean_comm_s": statistics.fmean(p["comm_s"] for p in per_round),
        "final_loss": per_round[-1]["loss"],
        "replica_max_diff": drift,
        "per_round": per_round,
    }
