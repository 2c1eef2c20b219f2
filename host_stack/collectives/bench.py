"""`inart bench collectives`: time and algorithm bandwidth of ring, RAT tree, RSGCM schedule and
torch's all_reduce, side by side in one run, with each one's ratio to torch's.

Every iteration runs the schemes round-robin on the same buffer size after a barrier, so a
noisy machine slows all of them alike; a scheme's time at a size is the median over iterations
of the slowest rank's time.  Algorithm bandwidth = buffer bytes / time.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from control_plane.cli.args import add_quiet, add_scheme, deprecate
from host_stack.collectives.launch import run_processes
from host_stack.collectives.ring import DEFAULT_CHUNK_BYTES
from host_stack.collectives.schemes import SCHEMES, SchemeConfig, bind, prepare

DEFAULT_SIZES = ["4K", "256K", "1M", "4M", "16M", "64M"]
RING_GOAL = 1.2  # ring within 1.2x of torch's all_reduce at 16 MB and above


def parse_size(text: str) -> int:
    """'64M' -> 67108864 bytes (K, M, G suffixes, powers of two)."""
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    try:
        n = int(float(t[:-1]) * mult[t[-1]]) if t and t[-1] in mult else int(t)
    except (ValueError, IndexError) as exc:
        raise argparse.ArgumentTypeError(f"size '{text}': expected bytes like 4K, 16M") from exc
    if n < 4:
        raise argparse.ArgumentTypeError(f"size '{text}': expected at least 4 bytes (one float)")
    return n


def configure(parser: argparse.ArgumentParser) -> None:
    """Options of the benchmark."""
    parser.add_argument("--worlds", type=int, nargs="+", default=[4, 8],
                        help="process counts (default 4 8)")
    parser.add_argument("--sizes", type=parse_size, nargs="+",
                        default=[parse_size(s) for s in DEFAULT_SIZES],
                        help="buffer sizes in bytes, e.g. 4K 16M (float32)")
    add_scheme(parser, SCHEMES, ",".join(SCHEMES))
    deprecate(parser, "--schemes", "--scheme", spaces=True)
    parser.add_argument("--iters", type=int, default=5, help="timed iterations per size")
    parser.add_argument("--warmup", type=int, default=1, help="untimed iterations per size")
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    parser.add_argument("--chunk-bytes", type=parse_size, default=DEFAULT_CHUNK_BYTES,
                        help="ring pipeline chunk (default 4M)")
    parser.add_argument("--hosts-per-rack", type=int, default=2, help="tree: racks of this size")
    parser.add_argument("--rsgcm-s", type=int, default=2, choices=[1, 2], help="RSGCM S")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write DIR/collectives.json, .csv and .png (default: print only)")
    add_quiet(parser)
    parser.set_defaults(func=run)


def _worker(rank: int, world: int, device: torch.device, configs: list[SchemeConfig],
            sizes: list[int], iters: int, warmup: int) -> dict[str, list[float]] | None:
    fns = {c.scheme: bind(c, rank) for c in configs}
    out: dict[str, list[float]] = {name: [] for name in fns}
    bar = None
    if rank == 0:
        from control_plane.cli.args import progress as progress_bar
        bar = progress_bar(total=len(sizes) * (iters + warmup), desc=f"{world} procs", unit="it")
    for size in sizes:
        x = torch.ones(size // 4, device=device)
        times: dict[str, list[float]] = {name: [] for name in fns}
        for it in range(warmup + iters):
            for name, fn in fns.items():
                buf = x.clone()
                dist.barrier()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                t0 = time.perf_counter()
                fn(buf)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                elapsed = torch.tensor([time.perf_counter() - t0], device=device)
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
                if it >= warmup:
                    times[name].append(float(elapsed))
                if abs(float(buf[0]) - world) > 1e-3 or abs(float(buf[-1]) - world) > 1e-3:
                    raise RuntimeError(f"{name}: wrong sum at size {size}")
            if bar is not None:
                bar.update(1)
        for name in fns:
            out[name].append(statistics.median(times[name]))
    if bar is not None:
        bar.close()
    return out if rank == 0 else None


def measure(world: int, sizes: list[int], schemes: list[str], iters: int, warmup: int,
            backend: str, chunk_bytes: int, hosts_per_rack: int, rsgcm_s: int
            ) -> list[dict[str, Any]]:
    """Rows (one per size and scheme) for one process count."""
    configs = [prepare(s, world, hosts_per_rack=hosts_per_rack, rsgcm_s=rsgcm_s,
                       chunk_bytes=chunk_bytes, timeout_s=300.0) for s in schemes]
    res = run_processes(_worker, world, args=(configs, sizes, iters, warmup), backend=backend,
                        timeout_s=3600.0, op_timeout_s=300.0)[0]
    rows = []
    for i, size in enumerate(sizes):
        ref = res["torch"][i] if "torch" in res else None
        for name in schemes:
            t = res[name][i]
            rows.append({"world": world, "backend": backend, "bytes": size, "scheme": name,
                         "time_s": t, "algbw_GBps": size / t / 1e9,
                         "ratio_to_torch": t / ref if ref else None})
    return rows


def _human(n: int) -> str:
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return f"{n}B"


def table(rows: list[dict[str, Any]]) -> str:
    """Fixed-width table of the rows."""
    lines = [f"{'procs':>5} {'size':>6} {'scheme':>6} {'time ms':>10} {'algbw GB/s':>11} "
             f"{'x torch':>8}"]
    for r in rows:
        ratio = "" if r["ratio_to_torch"] is None else f"{r['ratio_to_torch']:.2f}"
        lines.append(f"{r['world']:>5} {_human(r['bytes']):>6} {r['scheme']:>6} "
                     f"{r['time_s'] * 1e3:>10.3f} {r['algbw_GBps']:>11.3f} {ratio:>8}")
    return "\n".join(lines)


def ring_goal(rows: list[dict[str, Any]]) -> list[str]:
    """One verdict line per process count for the ring-vs-torch goal at >= 16 MB."""
    out = []
    for world in sorted({r["world"] for r in rows}):
        big = [r for r in rows if r["world"] == world and r["scheme"] == "ring"
               and r["bytes"] >= 16 << 20 and r["ratio_to_torch"] is not None]
        if big:
            worst = max(r["ratio_to_torch"] for r in big)
            verdict = "met" if worst <= RING_GOAL else "NOT met"
            out.append(f"{world} procs: ring / torch at >= 16M worst {worst:.2f} "
                       f"(goal <= {RING_GOAL}): {verdict}")
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Algorithm bandwidth against size, one panel per process count."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    worlds = sorted({r["world"] for r in rows})
    fig, axes = plt.subplots(1, len(worlds), figsize=(5 * len(worlds), 4), squeeze=False)
    for ax, world in zip(axes[0], worlds, strict=True):
        for name in dict.fromkeys(r["scheme"] for r in rows):
            pts = [(r["bytes"], r["algbw_GBps"]) for r in rows
                   if r["world"] == world and r["scheme"] == name]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes")
        ax.set_ylabel("algorithm bandwidth (GB/s)")
        ax.set_title(f"{world} processes")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    """Measure every process count, print the table and the goal, write the files."""
    for name in ("iters", "hosts_per_rack"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')}: expected >= 1")
    if any(w < 2 for w in args.worlds):
        raise SystemExit("--worlds: expected process counts >= 2")
    rows: list[dict[str, Any]] = []
    for world in args.worlds:
        rows += measure(world, args.sizes, args.scheme, args.iters, args.warmup, args.backend,
                        args.chunk_bytes, args.hosts_per_rack, args.rsgcm_s)
    print(table(rows))
    for line in ring_goal(rows):
        print(line)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        stem = args.out / "collectives"
        stem.with_suffix(".json").write_text(json.dumps(rows, indent=1))
        with stem.with_suffix(".csv").open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        plot(rows, stem.with_suffix(".png"))
        print(f"wrote {stem.with_suffix('.json')}, .csv, .png")
    return 0
