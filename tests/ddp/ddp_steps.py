"""A DDP job for the tests: an MLP on scikit-learn's digits, N steps, the parameters saved
per rank, and the per-step INA error bound accumulated (Σ over buckets and steps)."""

import argparse
import json

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import inart.torch
from inart.models import digits

p = argparse.ArgumentParser()
p.add_argument("--backend", choices=("inart", "gloo", "hook"))
p.add_argument("--steps", type=int, default=20)
p.add_argument("--save")
args = p.parse_args()
dist.init_process_group("gloo" if args.backend == "hook" else args.backend)
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 64),
                                torch.nn.ReLU(), torch.nn.Linear(64, 10)),
            bucket_cap_mb=0.01)  # several buckets per step
state = None
if args.backend == "hook":
    state = inart.torch.hook_state()
    model.register_comm_hook(state, inart.torch.inart_hook)
x, y, _, _ = digits(8)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
gen = torch.Generator().manual_seed(rank)
for _ in range(args.steps):
    idx = torch.randint(rank, len(y) - world, (16,), generator=gen)
    opt.zero_grad()
    F.cross_entropy(model(x[idx]), y[idx]).backward()
    opt.step()
torch.save([q.detach() for q in model.parameters()], args.save.format(rank=rank))
out = {"event": "done", "rank": rank}
if args.backend != "gloo":
    out["stats"] = (state or dist.distributed_c10d._get_default_group()).stats()
print(json.dumps(out), flush=True)
dist.destroy_process_group()
