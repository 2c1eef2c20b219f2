"""Data-parallel ResNet training with PyTorch's DistributedDataParallel, unchanged whichever
backend carries the gradients.

    inart train --plan PLAN --script examples/ddp_resnet.py -- --backend inart
    inart train --plan PLAN --script examples/ddp_resnet.py -- --backend gloo
    torchrun --nproc-per-node 4 examples/ddp_resnet.py --backend gloo     # without inart

--backend inart: dist.init_process_group("inart"), every all-reduce through the plan's
switches and PSs; hook: gloo for everything but DDP's gradient buckets, which go through
the inart communication hook; gloo: plain gloo.  ResNet-18/50 from random weights on
scikit-learn's digits (upsampled to --size pixels), nothing downloaded.  Prints one JSON
line per step and evaluation, and a "done" line with the test accuracy and a digest of the
parameters (equal on every rank).
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
from inart.models import digits, resnet18, resnet50


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("inart", "gloo", "hook"), default="inart")
    p.add_argument("--model", choices=("resnet18", "resnet50"), default="resnet18")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=32, help="per worker")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", type=int, default=32, help="image side in pixels")
    p.add_argument("--eval-every", type=int, default=0, metavar="K",
                   help="test accuracy every K steps (not counted in step time)")
    p.add_argument("--compute-steps", type=int, default=0, metavar="K",
                   help="first time K steps without any all-reduce (DDP no_sync): the "
                        "compute alone, against which communication left exposed is measured")
    p.add_argument("--time-comm", action="store_true",
                   help="time each bucket's all-reduce (a hook doing what DDP's default does)")
    p.add_argument("--save", default=None, help="write the final state_dict here ({rank}: "
                                                "the rank)")
    return p.parse_args()


def main() -> None:
    args = parse()
    dist.init_process_group("gloo" if args.backend == "hook" else args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    build = resnet18 if args.model == "resnet18" else resnet50
    model = DDP(build(num_classes=10, small_input=True))
    timer = None
    if args.backend == "hook":
        model.register_comm_hook(inart.torch.hook_state(), inart.torch.inart_hook)
    elif args.time_comm:
        timer = inart.torch.CommTimer()
        model.register_comm_hook(timer, inart.torch.timed_allreduce)
    train_x, train_y, test_x, test_y = digits(args.size, args.seed)
    mine = torch.arange(rank, len(train_y), world)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    gen = torch.Generator().manual_seed(args.seed * 1000 + rank)

    def step() -> float:
        idx = mine[torch.randint(len(mine), (args.batch,), generator=gen)]
        opt.zero_grad()
        loss = F.cross_entropy(model(train_x[idx]), train_y[idx])
        loss.backward()
        return float(loss)

    compute = []
    if args.compute_steps:
        state = {k: v.clone() for k, v in model.state_dict().items()}
        with model.no_sync():
            for _ in range(args.compute_steps):
                t0 = time.perf_counter()
                step()
                compute.append(time.perf_counter() - t0)
        model.load_state_dict(state)
        opt.zero_grad()
    emit = rank == 0
    start = time.perf_counter()
    for i in range(args.steps):
        t0 = time.perf_counter()
        loss = step()
        step_s = time.perf_counter() - t0
        opt.step()
        if emit:
            rec = {"event": "step", "step": i, "loss": loss, "step_s": step_s,
                   "elapsed_s": time.perf_counter() - start}
            if timer is not None:
                rec["comm_busy_s"] = timer.busy()
            if compute:
                rec["compute_s"] = sorted(compute)[len(compute) // 2]
            print(json.dumps(rec), flush=True)
        if args.eval_every and (i + 1) % args.eval_every == 0:
            t_eval = time.perf_counter()
            acc = accuracy(model.module, test_x, test_y)
            start += time.perf_counter() - t_eval  # evaluation is not training time
            if emit:
                print(json.dumps({"event": "eval", "step": i, "accuracy": acc,
                                  "elapsed_s": time.perf_counter() - start}), flush=True)
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                     for p in model.parameters())).hexdigest()
    if args.save:
        torch.save(model.module.state_dict(), args.save.format(rank=rank))
    print(json.dumps({"event": "done", "rank": rank, "backend": args.backend,
                      "accuracy": accuracy(model.module, test_x, test_y),
                      "params_sha256": digest}), flush=True)
    dist.destroy_process_group()


@torch.no_grad()
def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    hits = sum(int((model(x[i:i + 256]).argmax(1) == y[i:i + 256]).sum())
               for i in range(0, len(y), 256))
    model.train()
    return hits / len(y)


if __name__ == "__main__":
    main()
