"""Every collective a script may call on backend inart, checked against exact sums
gathered over the group's gloo side; rank 0 prints one JSON line of verdicts."""

import json
import math

import torch
import torch.distributed as dist

import inart.torch

dist.init_process_group("inart")
rank, world = dist.get_rank(), dist.get_world_size()
gen = torch.Generator().manual_seed(rank)
checks = {}


def exact(t):
    parts = [torch.zeros_like(t) for _ in range(world)]
    dist.all_gather(parts, t.clone())
    return torch.stack(parts).double().sum(0), float(torch.stack(parts).abs().max())


for dtype in (torch.float32, torch.float16, torch.bfloat16):
    t = (torch.randn(3, 1000, 7, generator=gen) * 10 ** (rank - 2)).to(dtype)
    want, top = exact(t)
    dist.all_reduce(t)
    err = float((t.double() - want).abs().max())
    checks[str(dtype)] = err <= inart.torch.error_bound(world, top, str(dtype)[6:])
t = torch.randint(-2**30, 2**30, (5000,), generator=gen, dtype=torch.int32)
want = torch.stack([torch.zeros_like(t)] * world)
dist.all_gather(list(want.unbind()), t.clone())
dist.all_reduce(t)
checks["int32_wraps_like_gloo"] = bool((t.long() - want.long().sum(0)).remainder(2**32).eq(0)
                                       .all())
a, b = torch.full((10,), float(rank)), torch.full((3, 3), 1.0)
dist.all_reduce_coalesced([a, b])
checks["coalesced"] = bool((a == sum(range(world))).all() and (b == world).all())
avg = torch.full((100,), float(rank))
dist.all_reduce(avg, op=dist.ReduceOp.AVG)
checks["avg"] = bool(((avg - (world - 1) / 2).abs() < 1e-6).all())
m = torch.tensor([float(rank)])
dist.all_reduce(m, op=dist.ReduceOp.MAX)
checks["max_via_gloo"] = m.item() == world - 1
i64 = torch.tensor([rank], dtype=torch.int64)
dist.all_reduce(i64)
checks["int64_via_gloo"] = i64.item() == sum(range(world))
nan = torch.zeros(10)
nan[3] = math.nan if rank == 1 else 1.0
dist.all_reduce(nan)
checks["nan_propagates"] = math.isnan(nan[3].item()) and nan[0].item() == 0
z = torch.zeros(1000)
dist.all_reduce(z)
checks["zeros"] = bool((z == 0).all())
big = torch.ones(9_000_000)  # more than one round's capacity: several rounds
dist.all_reduce(big)
checks["beyond_capacity"] = bool((big == world).all())
c = torch.full((4,), complex(rank, 1))  # torch sends complex as its real view: INA float32
dist.all_reduce(c)
checks["complex"] = bool((c == complex(sum(range(world)), world)).all())
try:
    dist.all_reduce(torch.ones(3), op=dist.ReduceOp.BAND)
    checks["band_refused"] = False
except Exception as exc:  # noqa: BLE001
    checks["band_refused"] = "carried by neither" in str(exc)
b = torch.tensor([float(rank)])
dist.broadcast(b, src=2)
checks["broadcast_via_gloo"] = b.item() == 2.0
dist.barrier()
stats = dist.distributed_c10d._get_default_group().stats()
if rank == 0:
    print(json.dumps({"event": "checks", "checks": checks, "stats": stats}), flush=True)
dist.destroy_process_group()
