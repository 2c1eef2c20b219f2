"""A job whose worker rank --die-rank raises after a few all-reduces (or none: every rank
all-reduces for --seconds, for a test that kills a PS meanwhile)."""

import argparse
import time

import torch
import torch.distributed as dist

import inart.torch  # noqa: F401

p = argparse.ArgumentParser()
p.add_argument("--die-rank", type=int, default=-1)
p.add_argument("--seconds", type=float, default=5.0)
args = p.parse_args()
dist.init_process_group("inart")
print("started", flush=True)
end = time.monotonic() + args.seconds
step = 0
while time.monotonic() < end:
    dist.all_reduce(torch.ones(50_000))
    step += 1
    if step == 3 and dist.get_rank() == args.die_rank:
        raise SystemExit("rank gave up on purpose")
dist.destroy_process_group()
