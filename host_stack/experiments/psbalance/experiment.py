"""`inart experiment ps-balance`: Aware vs Average vs Elastic on tc-limited namespaces.

Models are synthetic float32 vectors of the paper's model sizes times --scale (MobileNet 21 MB,
ResNet50 93 MB, AlexNet 228 MB; default scale 1/100) - iteration time here is communication
only (no compute).  Link rates: U[0.1, 1] x --max-mbit per node (paper: up to 220 Mbit/s; default
22, scaled for a 2-core machine), re-drawn every --period s (paper: 300 s).  Needs root.
"""

from __future__ import annotations

import argparse
import csv
import json
import signal
import statistics
import sys
from pathlib import Path

from tqdm import tqdm

from host_stack.experiments.cli import add_common_args
from host_stack.experiments.psbalance.cluster import RunConfig, started

MODELS_MB = {"mobilenet": 21, "resnet50": 93, "alexnet": 228}
PAPER_SPEEDUP = {"mobilenet": 2.68, "resnet50": 1.76, "alexnet": 1.32}
PAPER_ELASTIC = {"mobilenet": 1.14, "resnet50": 1.56, "alexnet": 1.23}
SCHEMES = ("average", "elastic", "aware")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add this experiment's options; sets ``func``."""
    add_common_args(parser, "ps-balance", 1, "rate schedules to run",
                    "4 nodes, 1/400 models, 4 s segments (for tests)")
    parser.add_argument("--nodes", type=int, default=6, help="paper: 12")
    parser.add_argument("--max-mbit", type=float, default=22.0)
    parser.add_argument("--period", type=float, default=20.0)
    parser.add_argument("--duration", type=float, default=40.0, help="seconds per segment")
    parser.add_argument("--scale", type=float, default=0.01, help="model size factor")
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS_MB),
                        default=list(MODELS_MB))
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # SIGTERM unwinds like Ctrl-C, so the namespaces and node processes are always removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.quick:
        args.nodes, args.scale, args.duration, args.period = 4, 1 / 400, 4.0, 2.0
        args.models, args.seeds = ["mobilenet", "alexnet"], 1
    records: list[dict] = []
    total = args.seeds * len(args.models) * len(SCHEMES) * args.duration
    with tqdm(total=total, desc="ps-balance (s)", unit="s") as bar:
        for seed in range(args.seeds):
            cfg = RunConfig(nodes=args.nodes, max_mbit=args.max_mbit, period=args.period,
                            duration=args.duration, seed=seed)
            with started(cfg) as cluster:
                for model in args.models:
                    size = int(MODELS_MB[model] * 1e6 * args.scale) // 4 * 4
                    for scheme in SCHEMES:
                        with tqdm(total=args.duration, leave=False, desc=f"{model} {scheme}",
                                  unit="s") as seg:
                            recs = cluster.segment(scheme, size, seg)
                        bar.update(args.duration)
                        records += [{**r, "model": model, "seed": seed} for r in recs]
    summary = summarise(records, args.models)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "iterations.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    (args.out / "summary.json").write_text(json.dumps(
        {"settings": {k: str(v) for k, v in vars(args).items() if k != "func"},
         "rows": summary}, indent=1))
    print(format_table(summary))
    plot(records, summary, args.out / "ps_balance.png")
    print(f"wrote {args.out}/iterations.csv, summary.json, ps_balance.png")
    return 0


def summarise(records: list[dict], models: list[str]) -> list[dict]:
    """Mean iteration time per (model, scheme); speed-up = Average's mean / scheme's mean."""
    out = []
    for model in models:
        row: dict[str, object] = {"model": model}
        for scheme in SCHEMES:
            secs = [r["seconds"] for r in records if (r["model"], r["scheme"]) == (model, scheme)]
            row[f"{scheme}_s"] = statistics.mean(secs)
            row[f"{scheme}_iters"] = len(secs)
        stars = [r["t_star_s"] for r in records if r["model"] == model]
        row["t_star_s"] = statistics.mean(stars)
        row["model_bytes"] = next(r["model_bytes"] for r in records if r["model"] == model)
        for scheme in ("elastic", "aware"):
            row[f"{scheme}_speedup"] = row["average_s"] / row[f"{scheme}_s"]  # type: ignore[operator]
        out.append(row)
    return out


def format_table(summary: list[dict]) -> str:
    head = (f"{'model':10s} {'bytes':>9s} | {'iteration time (s)  avg / elastic / aware':>42s}"
            f" | {'T* (s)':>6s} | {'elastic x':>9s} {'aware x':>8s} | paper elastic / aware")
    lines = [head, "-" * len(head)]
    for r in summary:
        m = r["model"]
        lines.append(
            f"{m:10s} {r['model_bytes']:9d} | {r['average_s']:12.3f} {r['elastic_s']:12.3f} "
            f"{r['aware_s']:16.3f} | {r['t_star_s']:6.3f} | {r['elastic_speedup']:9.2f} "
            f"{r['aware_speedup']:8.2f} | {PAPER_ELASTIC[m]:.2f} / {PAPER_SPEEDUP[m]:.2f}")
    return "\n".join(lines)


def plot(records: list[dict], summary: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    models = [r["model"] for r in summary]
    for k, scheme in enumerate(SCHEMES):
        axes[0].bar([i + 0.27 * (k - 1) for i in range(len(models))],
                    [r[f"{scheme}_s"] for r in summary], width=0.27, label=scheme)
    axes[0].set_xticks(range(len(models)), models)
    axes[0].set_ylabel("mean iteration time (s)")
    axes[0].legend()
    last = models[-1]
    for scheme in SCHEMES:
        pts = [(r["t"], r["seconds"]) for r in records
               if (r["model"], r["scheme"], r["seed"]) == (last, scheme, 0)]
        axes[1].plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=scheme)
    axes[1].set_xlabel("time in segment (s); rates re-drawn every period")
    axes[1].set_ylabel(f"iteration time, {last} (s)")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
