"""`inart experiment inart-testbed`: the InArt paper's testbed figures (section 5.2) in emulation.

The paper's testbed is the Fig. 1 cluster (two Tofino switches, six workers, two PSs, 100 Gbit/s
links) training VGG19 on CIFAR-100 with batch 32, and it quotes, for six workers, InArt,
R-InArt (equal split), ATP and LBMM: the sending rate (Fig. 2), the training throughput
(Fig. 3), the per-iteration time (Fig. 4), the communication time (Fig. 5), the time for 2000
iterations (Fig. 6) and the time to an accuracy of 0.7214 (Fig. 7).  Here the same four plans
train this repository's model on fig1 in Mininet (`head_to_head.train_all`: real training,
INA through the embedded P4 switches, links shaped to ``--scale`` Mbit/s per unit), and every
figure is compared as the paper's own ratio to InArt beside ours, because the absolute values
depend on the hardware (100 Gbit/s and RTX 3090s there, Mbit/s and two CPU cores here).
``--from head_to_head.json`` builds the comparison from an earlier head-to-head run that
included these four schemes instead of training again.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from control_plane.report import format_table, to_csv
from emulation.experiments.head_to_head import (
    add_training_args,
    spread,
    train_all,
    write,
)

SCHEMES = ("inart", "r-inart", "atp", "lbmm")

# (row key, figure, what, unit here, the paper's value per scheme at six workers, VGG19)
PAPER: list[tuple[str, str, str, str, dict[str, float]]] = [
    ("rate_mbps", "Fig. 2", "sending rate per worker", "Mbit/s (paper Gbit/s)",
     {"inart": 26.2, "r-inart": 23.1, "atp": 19.25, "lbmm": 15.4}),
    ("images_per_s", "Fig. 3", "training throughput", "images/s",
     {"inart": 223, "r-inart": 206, "atp": 188, "lbmm": 162}),
    ("iter_s", "Fig. 4", "per-iteration time", "s",
     {"inart": 0.69, "r-inart": 0.78, "atp": 0.85, "lbmm": 0.97}),
    ("comm_s", "Fig. 5", "communication time per iteration", "s",
     {"inart": 0.31, "r-inart": 0.38, "atp": 0.45, "lbmm": 0.56}),
    ("train_s", "Fig. 6", "time for the run's iterations (paper: 2000)", "s",
     {"inart": 1380, "r-inart": 1541, "atp": 1775, "lbmm": 2105}),
    ("time_to_target_s", "Fig. 7", "time to the target accuracy (paper: 0.7214)", "s",
     {"inart": 151, "r-inart": 181, "atp": 208, "lbmm": 278}),
]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_training_args(parser, "inart-testbed", SCHEMES,
                      "fig1, 6 rounds (what the tests run)")
    parser.add_argument("--from", dest="source", type=Path, default=None,
                        help="compare an earlier head_to_head.json instead of training")
    parser.set_defaults(func=run)


def compare(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per (figure, scheme): the paper's value and its ratio to InArt's, our median
    [min-max] over seeds and its ratio to InArt's median, and ours/paper of the two ratios.
    The plan's own ratio is given where the plan decides the figure (rate: f; comm: 1/f)."""
    if "inart" not in {r["scheme"] for r in rows}:
        raise ValueError("the comparison is relative to InArt: the runs have no 'inart'")
    plan = {r["scheme"]: r["plan_rate_units"] for r in rows if r.get("plan_rate_units")}
    lines = []
    for key, fig, what, unit, paper in PAPER:
        ours = spread(rows, key)
        base = ours.get("inart") or [None]
        for scheme, vals in ours.items():
            p = paper.get(scheme)
            p_ratio = p / paper["inart"] if p is not None else None
            o_ratio = vals[0] / base[0] if vals and base[0] else None
            plan_ratio = None
            if scheme in plan and "inart" in plan and key in ("rate_mbps", "comm_s"):
                plan_ratio = plan[scheme] / plan["inart"]
                plan_ratio = plan_ratio if key == "rate_mbps" else 1 / plan_ratio
            lines.append({
                "figure": fig, "metric": what, "unit": unit, "scheme": scheme,
                "paper": p, "paper_vs_inart": p_ratio,
                "ours": vals[0] if vals else None,
                "ours_min": vals[1] if vals else None, "ours_max": vals[2] if vals else None,
                "ours_vs_inart": o_ratio, "plan_vs_inart": plan_ratio,
                "ours/paper": o_ratio / p_ratio if o_ratio and p_ratio else None,
            })
    return lines


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    if args.source:
        rows = json.loads(args.source.read_text())["runs"]
    else:
        if args.quick:
            args.topology, args.rounds, args.eval_every = "fig1", 6, 3
        rows = train_all(args, args.scheme, "inart-testbed")
        write(rows, out, args)
    lines = compare(rows)
    seeds = len({r["seed"] for r in rows})
    print(f"\nInArt testbed figures (InArt, WWW '24, 5.2; six workers, VGG19) vs this emulation "
          f"(median of {seeds} seed(s)); ratios are to InArt's value")
    print(format_table(lines, ["figure", "scheme", "paper", "paper_vs_inart", "ours",
                               "ours_vs_inart", "plan_vs_inart", "ours/paper"]))
    out.mkdir(parents=True, exist_ok=True)
    (out / "testbed.json").write_text(json.dumps(lines, indent=1) + "\n")
    (out / "testbed.csv").write_text(to_csv(lines))
    plot(lines, rows, out)
    print(f"written: {out / 'testbed.json'}, .csv, testbed-ratios.png, training_time.png")
    return 0


def plot(lines: list[dict[str, Any]], rows: list[dict[str, Any]], out: Path) -> None:
    """Paper vs ours ratio per figure and scheme; cumulative training time vs iterations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = list(dict.fromkeys(line["figure"] for line in lines))
    schemes = [s for s in dict.fromkeys(line["scheme"] for line in lines) if s != "inart"]
    fig, axes = plt.subplots(1, len(figures), figsize=(3 * len(figures), 3.5), sharey=True)
    for ax, name in zip(axes, figures, strict=True):
        mine = {line["scheme"]: line for line in lines if line["figure"] == name}
        xs = range(len(schemes))
        ax.bar([x - 0.2 for x in xs], [mine[s]["paper_vs_inart"] or 0 for s in schemes], 0.4,
               label="paper")
        ax.bar([x + 0.2 for x in xs], [mine[s]["ours_vs_inart"] or 0 for s in schemes], 0.4,
               label="ours")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xticks(list(xs), schemes)
        ax.set_title(name)
    axes[0].set_ylabel("value / InArt's")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out / "testbed-ratios.png", dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    for scheme in dict.fromkeys(r["scheme"] for r in rows):
        runs = [r["per_round"] for r in rows if r["scheme"] == scheme]
        n = min(len(x) for x in runs)
        cum, t = [], 0.0
        for i in range(n):
            t += statistics.fmean(x[i]["compute_s"] + x[i]["comm_s"] for x in runs)
            cum.append(t)
        ax.plot(range(1, n + 1), cum, label=scheme)
    ax.set_xlabel("iterations")
    ax.set_ylabel("training time (s, mean over seeds)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "training_time.png", dpi=120)
    plt.close(fig)
