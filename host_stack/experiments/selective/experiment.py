"""`inart experiment selective`: selective vs partial vs all-reduce across n (Figs. 5-6).

Runs the simulator for every (trace, n, scheme, seed), writes runs.csv (one row per run),
summary.csv (median, min, max over seeds - the paper reports min/median/max of 20 trials),
summary.json and sync.png, and prints the table with the selective/partial ratios that the
paper summarises as 1.89-2.55x (sync time) and 1.19-1.25x (sync scale).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from pathlib import Path

from control_plane.cli.args import progress as progress_bar
from host_stack.cli.experiment import add_common_args
from host_stack.experiments.selective.controller import SCHEMES
from host_stack.experiments.selective.simulator import TRACES, SimConfig, simulate

PAPER = {"sync_time_speedup": (1.89, 2.55), "sync_scale_gain": (1.19, 1.25)}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add this experiment's options; sets ``func``."""
    add_common_args(parser, "selective", 20, "trial seeds per setting (paper: 20 trials, 0-19)",
                    "tiny grid for tests: n 10 20, 2 seeds, 20 s, cnn trace")
    parser.add_argument("--n", type=int, nargs="+", default=[40, 80, 120, 160, 200],
                        help="cluster sizes (paper: 40..200 step 40)")
    parser.add_argument("--trace", choices=sorted(TRACES), nargs="+", default=sorted(TRACES))
    parser.add_argument("--horizon", type=float, default=100.0, help="simulated seconds")
    parser.add_argument("--ready-mode", choices=["printed", "conditional"], default="printed",
                        help="Eq. 4 as printed (F(t+dt)) or the conditional probability")
    parser.add_argument("--cold", action="store_true",
                        help="learn the compute-time CDF online from nothing (cold start)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the grid, print the table, write the files."""
    if args.quick:
        args.n, args.seeds, args.horizon, args.trace = [10, 20], args.seeds[:2], 20.0, ["cnn"]
    configs = [SimConfig(scheme=s, n=n, trace=t, seed=seed, horizon=args.horizon,
                         ready_mode=args.ready_mode, warm=not args.cold)
               for t in args.trace for n in args.n for s in SCHEMES for seed in args.seeds]
    rows = [simulate(c).summary() for c in progress_bar(configs, desc="selective sims", unit="run",
                                                     quiet=args.quiet)]
    summary = summarise(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "runs.csv", rows)
    write_csv(args.out / "summary.csv", summary)
    (args.out / "summary.json").write_text(json.dumps({"paper": PAPER, "rows": summary},
                                                      indent=1))
    print(format_table(summary))
    plot(summary, args.out / "sync.png")
    print(f"wrote {args.out}/runs.csv, summary.csv, summary.json, sync.png")
    return 0


def summarise(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Median/min/max per (trace, n, scheme) and the per-seed selective/partial ratios."""
    out: list[dict[str, object]] = []
    keys = sorted({(r["trace"], r["n"]) for r in rows})
    for trace, n in keys:
        by_scheme = {s: sorted((r for r in rows if (r["trace"], r["n"], r["scheme"])
                                == (trace, n, s)), key=lambda r: r["seed"]) for s in SCHEMES}
        entry: dict[str, object] = {"trace": trace, "n": n, "p": by_scheme["partial"][0]["p"]}
        for s, rs in by_scheme.items():
            for metric in ("avg_sync_time", "avg_sync_scale", "total_iteration", "total_sync"):
                vals = [float(r[metric]) for r in rs]  # type: ignore[arg-type]
                entry[f"{s}_{metric}"] = statistics.median(vals)
                entry[f"{s}_{metric}_min"] = min(vals)
                entry[f"{s}_{metric}_max"] = max(vals)
        pairs = list(zip(by_scheme["partial"], by_scheme["selective"], strict=True))
        entry["time_speedup"] = statistics.median(
            float(a["avg_sync_time"]) / float(b["avg_sync_time"]) for a, b in pairs)  # type: ignore[arg-type]
        entry["scale_gain"] = statistics.median(
            float(b["avg_sync_scale"]) / float(a["avg_sync_scale"]) for a, b in pairs)  # type: ignore[arg-type]
        entry["iteration_gain"] = statistics.median(
            float(b["total_iteration"]) / float(a["total_iteration"]) for a, b in pairs)  # type: ignore[arg-type]
        out.append(entry)
    return out


def format_table(summary: list[dict[str, object]]) -> str:
    """Median over seeds; ratios are medians of per-seed selective/partial ratios."""
    head = (f"{'trace':12s} {'n':>4s} {'p':>3s} | {'sync time (s)  all / part / sel':>33s} | "
            f"{'sync scale  all / part / sel':>30s} | "
            f"{'time x':>6s} {'scale x':>7s} {'iter x':>6s}")
    lines = [head, "-" * len(head)]
    for e in summary:
        lines.append(
            f"{e['trace']:12s} {e['n']:4d} {e['p']:3d} | "
            f"{e['allreduce_avg_sync_time']:9.2f} {e['partial_avg_sync_time']:9.2f} "
            f"{e['selective_avg_sync_time']:13.2f} | "
            f"{e['allreduce_avg_sync_scale']:8.1f} {e['partial_avg_sync_scale']:8.1f} "
            f"{e['selective_avg_sync_scale']:12.1f} | "
            f"{e['time_speedup']:6.2f} {e['scale_gain']:7.2f} {e['iteration_gain']:6.2f}")
    lines.append(f"paper (selective vs partial): sync time {PAPER['sync_time_speedup'][0]}-"
                 f"{PAPER['sync_time_speedup'][1]}x faster, scale {PAPER['sync_scale_gain'][0]}-"
                 f"{PAPER['sync_scale_gain'][1]}x larger, total iteration 1.1-1.17x")
    return "\n".join(lines)


def write_csv(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot(summary: list[dict[str, object]], path: Path) -> None:
    """Sync time and sync scale vs n per trace, median with min-max bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = sorted({str(e["trace"]) for e in summary})
    fig, axes = plt.subplots(len(traces), 2, figsize=(10, 3.6 * len(traces)), squeeze=False)
    for row, trace in enumerate(traces):
        es = [e for e in summary if e["trace"] == trace]
        ns = [int(e["n"]) for e in es]  # type: ignore[call-overload]
        for col, metric, label in ((0, "avg_sync_time", "average sync time (s)"),
                                   (1, "avg_sync_scale", "average sync scale (workers)")):
            ax = axes[row][col]
            for s in SCHEMES:
                med = [float(e[f"{s}_{metric}"]) for e in es]  # type: ignore[arg-type]
                lo = [m - float(e[f"{s}_{metric}_min"]) for m, e in zip(med, es, strict=True)]  # type: ignore[arg-type]
                hi = [float(e[f"{s}_{metric}_max"]) - m for m, e in zip(med, es, strict=True)]  # type: ignore[arg-type]
                ax.errorbar(ns, med, yerr=[lo, hi], marker="o", capsize=3, label=s)
            ax.set_xlabel("workers n")
            ax.set_ylabel(label)
            ax.set_title(f"{trace} trace")
            ax.grid(alpha=0.3)
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
