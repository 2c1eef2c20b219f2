"""Single-process training that a distributed run must match (same seed, same samples).

Round r uses the union of the minibatches the W workers draw in round r (each worker's
shard and data-order seed as in host_stack/train/worker.py), i.e. the same effective batch size
W * batch, and the same MomentumSGD rule the PSs apply.  With equal per-worker batch sizes the
mean loss over the union equals the average of the workers' mean losses, so the only
difference left in a distributed run is quantization and floating-point summation order.
"""

from __future__ import annotations

import torch
from torch import nn

from host_stack.train.data import digits, shard
from host_stack.train.loop import accuracy, batches
from host_stack.train.models import build_model, flat_grads, flat_params, load_flat_params
from host_stack.train.sync import MomentumSGD


def reference_training(model_name: str, workers: int, rounds: int, batch: int, lr: float,
                       momentum: float, seed: int = 0) -> tuple[float, list[float]]:
    """(test accuracy, per-round loss) of single-process training."""
    from host_stack.train.worker import worker_seed

    model = build_model(model_name, seed)
    x_tr, y_tr, x_te, y_te = digits(seed=seed)
    shards = [shard(x_tr, y_tr, r, workers) for r in range(workers)]
    orders = [batches(len(xs), batch, rounds, worker_seed(seed, r))
              for r, (xs, _) in enumerate(shards)]
    opt = MomentumSGD(lr, momentum)
    params = flat_params(model)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for r in range(rounds):
        x = torch.cat([xs[orders[k][r]] for k, (xs, _) in enumerate(shards)])
        y = torch.cat([ys[orders[k][r]] for k, (_, ys) in enumerate(shards)])
        model.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        params = opt.apply(params, flat_grads(model))
        load_flat_params(model, params)
        losses.append(loss.item())
    return accuracy(model, x_te, y_te), losses
