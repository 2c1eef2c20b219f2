"""All-reduce throughput by tensor size on the group's backend: run on every worker by
`inart bench ddp` (through `inart train --script`); rank 0 prints one JSON line per size,
with the machine's CPU time per call (every process of the job, and whatever else runs)."""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.distributed as dist

import inart.torch  # noqa: F401 (registers backend "inart")


def machine_busy_s() -> float:
    """CPU seconds this machine has spent on anything but idling, from /proc/stat (all
    cores): around the timed calls, what they cost every process of the job together."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:8]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # less idle, iowait


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="inart")
    p.add_argument("--sizes-mb", type=float, nargs="+", default=[1.0, 4.0, 25.0])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    dist.init_process_group(args.backend)
    gen = torch.Generator().manual_seed(dist.get_rank())
    for mb in args.sizes_mb:
        t = torch.randn(int(mb * 2**20 / 4), generator=gen)
        dist.all_reduce(t)  # warm-up: buffers, connections
        dist.barrier()
        times = []
        busy = machine_busy_s()
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - t0)
        cpu_s = (machine_busy_s() - busy) / args.repeat
        if dist.get_rank() == 0:
            best = sorted(times)[len(times) // 2]
            print(json.dumps({"event": "allreduce", "backend": args.backend, "mb": mb,
                              "median_s": best, "gbps": t.numel() * 4 * 8 / best / 1e9,
                              "cpu_s": cpu_s}), flush=True)
    if dist.get_rank() == 0 and args.backend == "inart":
        stats = dist.distributed_c10d._get_default_group().stats()
        print(json.dumps({"event": "stats", **stats}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
