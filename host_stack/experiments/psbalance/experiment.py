"""`inart experiment ps-balance`: Aware vs Average vs Elastic on tc-limited namespaces.

Models are synthetic float32 vectors of the paper's model sizes times --scale (MobileNet 21 MB,
ResNet50 93 MB, AlexNet 228 MB; default scale 1/100) - iteration time here is communication
only (no compute).  Link rates: U[--min-fraction, 1] x --max-mbit per node (paper: up to
220 Mbit/s, lower end unstated; default 22, scaled for a 2-core machine), re-drawn every
--period s (paper: 300 s).  "Average" is an equal split (--baseline equal) or stock MXNet's
key-to-server assignment (--baseline mxnet, mxnet_default.py).  Every speed-up is printed next
to what the cost model predicts for the same rates and shares, the paper's, and ours / paper.
--paper-setting takes the paper's 12 nodes, MXNet's baseline, the skew its numbers imply and
slices as fine, relative to the model, as the paper's;
--predict prints only the cost model's sweep (no root, no namespaces).  docs/ps-balance.md
reads the results.  Needs root (except --predict).
"""

from __future__ import annotations

import argparse
import csv
import json
import signal
import statistics
import sys
from pathlib import Path

from control_plane.cli.args import deprecate, names_of
from control_plane.cli.args import progress as progress_bar
from host_stack.cli.experiment import add_common_args
from host_stack.experiments.psbalance.cluster import CAPABILITIES, RunConfig, started
from host_stack.experiments.psbalance.predict import predicted_speedups

MODELS_MB = {"mobilenet": 21, "resnet50": 93, "alexnet": 228}
PAPER_SPEEDUP = {"mobilenet": 2.68, "resnet50": 1.76, "alexnet": 1.32}
PAPER_ELASTIC = {"mobilenet": 1.14, "resnet50": 1.56, "alexnet": 1.23}
SCHEMES = ("average", "elastic", "aware")
BASELINES = {"equal": "average", "mxnet": "average-mxnet"}
# --paper-setting: 12 nodes (paper 4.1), MXNet's own assignment as "Average" (the paper runs
# stock MXNet against its modified one), rates U[0.5, 1] x max: the lower end the paper does
# not state; 0.5 fits its three speed-ups best under the cost model; 8 KiB slices: at the
# default 1/100 scale about as many slices per model as the paper's 10^5-10^5.5 parameters
# give (docs/ps-balance.md)
PAPER_SETTING = {"nodes": 12, "baseline": "mxnet", "min_fraction": 0.5}
SLICE_KB, PAPER_SLICE_KB = 64, 8  # --slice-kb unless given
PREDICT_FRACTIONS = (1.0, 0.75, 0.5, 0.25, 0.1, 0.01)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add this experiment's options; sets ``func``."""
    add_common_args(parser, "ps-balance", 1, "seeds of the rate schedules to run",
                    "4 nodes, 1/400 models, 4 s segments (for tests)")
    parser.add_argument("--nodes", type=int, default=6, help="paper: 12")
    parser.add_argument("--max-mbit", type=float, default=22.0)
    parser.add_argument("--min-fraction", type=float, default=0.1,
                        help="rates are U[f, 1] x --max-mbit (the skew; paper: unstated)")
    parser.add_argument("--baseline", choices=sorted(BASELINES), default="equal",
                        help="what Average is: an equal split, or stock MXNet's key hashing")
    parser.add_argument("--paper-setting", action="store_true",
                        help="12 nodes, --baseline mxnet, --min-fraction 0.5, and "
                             f"--slice-kb {PAPER_SLICE_KB} unless given")
    parser.add_argument("--predict", action="store_true",
                        help="print only the cost model's speed-ups over baselines x skews")
    parser.add_argument("--capabilities", choices=CAPABILITIES, default="probe",
                        help="plan from forecast/probe rates, from those and the data "
                             "messages' rates (paper 3.2), or from the rates tc set (an "
                             "oracle that isolates measurement error)")
    parser.add_argument("--period", type=float, default=20.0)
    parser.add_argument("--duration", type=float, default=40.0, help="seconds per segment")
    parser.add_argument("--scale", type=float, default=0.01, help="model size factor")
    parser.add_argument("--slice-kb", type=int, default=None,
                        help=f"slice granularity in KiB (default {SLICE_KB}, with "
                             f"--paper-setting {PAPER_SLICE_KB}; paper: from its Eq. 4)")
    parser.add_argument("--model", type=names_of(sorted(MODELS_MB), every="all"),
                        default=list(MODELS_MB), metavar="MODEL[,MODEL...]",
                        help=f"the models whose gradients flow: comma-separated from "
                             f"{', '.join(sorted(MODELS_MB))}, or all (default all)")
    deprecate(parser, "--models", "--model", spaces=True)
    parser.set_defaults(func=run)


def apply_presets(args: argparse.Namespace) -> None:
    """--paper-setting, then --quick, override the options they name; --slice-kb defaults."""
    if args.paper_setting:
        for key, value in PAPER_SETTING.items():
            setattr(args, key, value)
    if args.slice_kb is None:
        args.slice_kb = PAPER_SLICE_KB if args.paper_setting else SLICE_KB
    if args.quick:
        args.nodes, args.scale, args.duration, args.period = 4, 1 / 400, 4.0, 2.0
        args.model, args.seeds = ["mobilenet", "alexnet"], [0]


def run(args: argparse.Namespace) -> int:
    apply_presets(args)
    if args.predict:
        print(format_predictions(args.nodes, args.model))
        return 0
    # SIGTERM unwinds like Ctrl-C, so the namespaces and node processes are always removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    baseline = BASELINES[args.baseline]
    records: list[dict] = []
    total = len(args.seeds) * len(args.model) * len(SCHEMES) * args.duration
    with progress_bar(total=total, desc="ps-balance (s)", unit="s", quiet=args.quiet) as bar:
        for seed in args.seeds:
            cfg = RunConfig(nodes=args.nodes, max_mbit=args.max_mbit,
                            min_fraction=args.min_fraction, period=args.period,
                            duration=args.duration, slice_bytes=args.slice_kb * 1024,
                            capabilities=args.capabilities, seed=seed)
            with started(cfg) as cluster:
                for model in args.model:
                    size = int(MODELS_MB[model] * 1e6 * args.scale) // 4 * 4
                    for scheme in SCHEMES:
                        with progress_bar(total=args.duration, leave=False, unit="s",
                                          quiet=args.quiet,
                                          desc=f"{model} {scheme}") as seg:
                            recs = cluster.segment(baseline if scheme == "average" else scheme,
                                                   size, seg, model_name=model)
                        bar.update(args.duration)
                        records += [{**r, "scheme": scheme, "model": model, "seed": seed}
                                    for r in recs]
    summary = summarise(records, args.model)
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


def format_predictions(nodes: int, models: list[str]) -> str:
    """The cost model's Aware (Elastic) speed-ups per baseline and skew, beside the paper's."""
    head = (f"cost model, {nodes} nodes, 200 rate draws U[f, 1]: aware (elastic) speed-up; "
            f"paper aware " + " / ".join(f"{PAPER_SPEEDUP[m]:.2f}" for m in models))
    cols = " ".join(f"{m:>15s}" for m in models)
    lines = [head, f"{'baseline':8s} {'f':>5s} {cols}"]
    for name, baseline in BASELINES.items():
        for frac in PREDICT_FRACTIONS:
            pred = predicted_speedups(nodes, frac, baseline, models)
            cells = " ".join(f"{pred[m]['aware']:8.2f} ({pred[m]['elastic']:4.2f})"
                             for m in models)
            lines.append(f"{name:8s} {frac:5.2f} {cells}")
    return "\n".join(lines)


def summarise(records: list[dict], models: list[str]) -> list[dict]:
    """Per model: mean measured and cost-model iteration time per scheme; speed-up = Average's
    mean / the scheme's mean, measured and predicted; ours / paper."""
    out = []
    for model in models:
        row: dict[str, object] = {"model": model}
        for scheme in SCHEMES:
            recs = [r for r in records if (r["model"], r["scheme"]) == (model, scheme)]
            row[f"{scheme}_s"] = statistics.mean(r["seconds"] for r in recs)
            row[f"{scheme}_model_s"] = statistics.mean(r["t_model_s"] for r in recs)
            row[f"{scheme}_iters"] = len(recs)
        stars = [r["t_star_s"] for r in records if r["model"] == model]
        row["t_star_s"] = statistics.mean(stars)
        row["model_bytes"] = next(r["model_bytes"] for r in records if r["model"] == model)
        for scheme in ("elastic", "aware"):
            row[f"{scheme}_speedup"] = row["average_s"] / row[f"{scheme}_s"]  # type: ignore[operator]
            row[f"{scheme}_model_speedup"] = (row["average_model_s"]  # type: ignore[operator]
                                              / row[f"{scheme}_model_s"])
        row["aware_cap_distortion"] = statistics.median(
            r["cap_distortion"] for r in records
            if (r["model"], r["scheme"]) == (model, "aware") and r["iter"] > 0)
        row["paper_aware"], row["paper_elastic"] = PAPER_SPEEDUP[model], PAPER_ELASTIC[model]
        row["aware_vs_paper"] = row["aware_speedup"] / PAPER_SPEEDUP[model]  # type: ignore[operator]
        out.append(row)
    return out


def format_table(summary: list[dict]) -> str:
    """Measured (cost model) times and speed-ups, the paper's, and ours / paper."""
    head = (f"{'model':10s} {'bytes':>9s} | {'iteration time, s: measured (model)':^47s}"
            f" | {'elastic x':^13s} {'aware x':^13s} | {'paper el/aw':^11s} | aware/paper")
    sub = (f"{'':10s} {'':9s} | {'average':^15s} {'elastic':^15s} {'aware':^15s}"
           f" | {'ours (model)':^13s} {'ours (model)':^13s} |")
    lines = [head, sub, "-" * len(head)]
    for r in summary:
        times = " ".join(f"{r[f'{s}_s']:6.3f} ({r[f'{s}_model_s']:6.3f})" for s in SCHEMES)
        lines.append(
            f"{r['model']:10s} {r['model_bytes']:9d} | {times} | "
            f"{r['elastic_speedup']:5.2f} ({r['elastic_model_speedup']:4.2f}) "
            f"{r['aware_speedup']:5.2f} ({r['aware_model_speedup']:4.2f}) | "
            f"{r['paper_elastic']:4.2f} / {r['paper_aware']:4.2f} | {r['aware_vs_paper']:6.2f}")
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
