"""`inart demo`: InArt vs ATP vs LBMM on the InArt paper's Fig. 1 cluster, planned and then
emulated: the plans' rates, then real INA traffic through P4 switches (the embedded target) on
Mininet, measured and plotted.

Where Mininet cannot run (not root, or no Mininet), the demo says why and shows the planned
numbers only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from control_plane.cli.args import add_out, positive
from control_plane.cli.main import main as inart_main
from control_plane.model.topologies import fig1
from control_plane.report import format_table, plan_row
from control_plane.solver.solve import solve
from emulation.network.mininet_net import mininet_available

SCHEMES = ("inart", "atp", "lbmm")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help="run the main demo", description=__doc__)
    add_out(p, "demo", "the plans, the emulation's results and demo.png")
    p.add_argument("--rounds", type=positive(int), default=3,
                   help="emulated iterations per scheme")
    p.set_defaults(func=run)


def plot(rows: list[dict], path: Path) -> None:
    """Planned vs measured sending rate and communication time, one bar pair per scheme."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["scheme"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, (plan_key, got_key, label) in zip(axes, [
            ("plan_rate_mbps", "rate_mbps", "sending rate per worker (Mbit/s)"),
            ("plan_comm_s", "comm_s", "communication time per iteration (s)")], strict=True):
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r[plan_key] for r in rows], 0.4, label="plan")
        ax.bar([x + 0.2 for x in xs], [r[got_key] for r in rows], 0.4, label="emulated")
        ax.set_xticks(list(xs), names)
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle("fig1: InArt vs ATP vs LBMM, embedded P4 target on Mininet")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    topo = fig1()
    plans = [solve(topo, s, seed=0) for s in SCHEMES]
    print("== fig1 planned (topology units; the paper: LBMM 4/3, ATP 2, InArt 2.5)")
    print(format_table([plan_row(p) for p in plans],
                       ["scheme", "rate", "upper_bound", "binding", "ps_ingress", "solve_s"]))
    reason = mininet_available()
    if reason:
        print(f"\nno emulation: {reason} (run as root on a machine where ./dev.sh installed "
              "Mininet)", file=sys.stderr)
        return 0
    print("\n== fig1 emulated: real INA traffic through the embedded P4 target on Mininet")
    code = inart_main(["emulate", "--topology", "fig1", "--scheme", ",".join(SCHEMES),
                       "--rounds", str(args.rounds), "--out", str(args.out), "--quiet"])
    if code != 0:
        return code
    rows = json.loads((args.out / "emulate.json").read_text())
    plot(rows, args.out / "fig1-emulated.png")
    print(f"plot: {args.out / 'fig1-emulated.png'}")
    return 0
