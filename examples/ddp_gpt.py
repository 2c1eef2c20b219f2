"""Data-parallel training of a small GPT-style transformer with DistributedDataParallel,
unchanged whichever backend carries the gradients.

    inart train --plan PLAN --script examples/ddp_gpt.py -- --backend inart
    inart train --plan PLAN --script examples/ddp_gpt.py -- --backend gloo
    torchrun --nproc-per-node 4 examples/ddp_gpt.py --backend gloo     # without inart

The task is generated (nothing downloaded): sequences whose second half copies the first;
the model learns to predict the copy.  --backend hook keeps gloo for everything but DDP's
gradient buckets, which go through the inart communication hook.  Prints one JSON line per
step and a "done" line with the copy accuracy and a digest of the parameters.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import inart.torch
from inart.models import TinyGPT, copy_task


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("inart", "gloo", "hook"), default="inart")
    p.add_argument("--steps", type=int, default=250)
    p.add_argument("--batch", type=int, default=16, help="sequences per worker")
    p.add_argument("--context", type=int, default=16)
    p.add_argument("--vocab", type=int, default=16)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-comm", action="store_true",
                   help="time each bucket's all-reduce (inart.torch.timed_allreduce)")
    return p.parse_args()


def copy_accuracy(model: torch.nn.Module, tokens: torch.Tensor) -> float:
    """Share of the second half's tokens predicted right (the copy)."""
    half = tokens.shape[1] // 2
    with torch.no_grad():
        pred = model(tokens[:, :-1]).argmax(-1)[:, half - 1:]
    return float((pred == tokens[:, half:]).float().mean())


def main() -> None:
    args = parse()
    dist.init_process_group("gloo" if args.backend == "hook" else args.backend)
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    model = DDP(TinyGPT(args.vocab, args.context, args.width, 4, args.layers))
    timer = None
    if args.backend == "hook":
        model.register_comm_hook(inart.torch.hook_state(), inart.torch.inart_hook)
    elif args.time_comm:
        timer = inart.torch.CommTimer()
        model.register_comm_hook(timer, inart.torch.timed_allreduce)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(args.seed * 1000 + rank)
    start = time.perf_counter()
    for i in range(args.steps):
        tokens = copy_task(args.batch, args.context, args.vocab, gen)
        t0 = time.perf_counter()
        opt.zero_grad()
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        step_s = time.perf_counter() - t0
        opt.step()
        if rank == 0:
            rec = {"event": "step", "step": i, "loss": float(loss), "step_s": step_s,
                   "elapsed_s": time.perf_counter() - start}
            if timer is not None:
                rec["comm_busy_s"] = timer.busy()
            print(json.dumps(rec), flush=True)
    test = copy_task(256, args.context, args.vocab, torch.Generator().manual_seed(12345))
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                     for p in model.parameters())).hexdigest()
    print(json.dumps({"event": "done", "rank": rank, "backend": args.backend,
                      "copy_accuracy": copy_accuracy(model.module, test),
                      "params_sha256": digest}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
