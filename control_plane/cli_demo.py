"""`inart demo`: the main demo — InArt vs its baselines on the paper's Fig. 1 cluster and on
a k=6 fat-tree, as a table, plan JSON files and a PNG bar chart.

(The emulated fig1 run will replace the fat-tree part once the emulation lands.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from control_plane.report import format_table, plan_row
from control_plane.solve import solve
from control_plane.topologies import fattree, fig1

SCHEMES = ("lbmm", "atp", "r-inart", "inart")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help="run the main demo", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("out/demo"), help="output directory")
    p.set_defaults(func=run)


def plot(results: dict[str, dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.5))
    for ax, (name, rates) in zip(axes, results.items(), strict=True):
        ax.bar(list(rates), list(rates.values()), color=["#999", "#e69f00", "#56b4e9", "#009e73"])
        ax.set_title(name)
        ax.set_ylabel("gradient sending rate per worker")
        for i, v in enumerate(rates.values()):
            ax.text(i, v, f"{v:.2f}", ha="center", va="bottom")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name, topo in (("fig1", fig1()), ("fattree:6 homogeneous", fattree(6))):
        print(f"\n== {name}: {len(topo.workers)} workers, {len(topo.pss)} PSs", flush=True)
        plans = [solve(topo, s, seed=0) for s in SCHEMES]
        print(format_table([plan_row(p, unit_mbps=1.0) for p in plans],
                           ["scheme", "rate", "upper_bound", "binding", "ps_ingress",
                            "comm_s_vgg19", "solve_s"]))
        for p in plans:
            p.save(args.out / f"{name.split()[0].replace(':', '')}-{p.scheme}.json")
        results[name] = {p.scheme: p.rate for p in plans}
        by = results[name]
        print(f"inart vs atp: {by['inart'] / by['atp']:.2f}x, vs lbmm: "
              f"{by['inart'] / by['lbmm']:.2f}x (paper, fig1: 1.25x and 1.875x)")
    plot(results, args.out / "rates.png")
    print(f"\nplans and rates.png written to {args.out}", file=sys.stderr)
    return 0
