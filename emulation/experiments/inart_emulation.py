"""`inart experiment inart-emulation`: the InArt paper's emulation figures (section 5.3).

Two sweeps over one emulated topology, each scheme installed and measured in turn:
- ``--sweep models`` (Figs. 8, 10, 13): gradient size per model (the paper's LSTM 1627 KB,
  VGG19 548 KB, ResNet-50 97 KB, already divided by 1000 there) times ``--size-scale`` so a
  Python switch can carry it; sending rate, communication time, network throughput, PS ingress;
- ``--sweep workers`` (Figs. 9, 11, 12): the number of workers of a fat-tree.
``--preset homogeneous|heterogeneous`` picks the capacities (the paper's two scenarios).
Writes ``<sweep>.csv`` / ``.json`` and one PNG per metric under --out.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from control_plane.cli.args import add_out, add_scheme, add_seeds, add_topology, deprecate, names_of
from control_plane.model.topologies import build_topology
from control_plane.solver.solve import SCHEMES, plan_for
from emulation.cli.emulate import add_emulation_args, comm_ratios, traffic_config
from emulation.measure.fidelity import ranking_lines
from emulation.measure.metrics import table, write_rows
from emulation.network.link_impair import from_args as impairment
from emulation.runs.emulate import Emulation

MODEL_KB = {"lstm": 1627, "vgg19": 548, "resnet50": 97}  # InArt paper, section 5.3.1
METRICS = [("rate_mbps", "sending rate per worker (Mbit/s)"),
           ("comm_s", "communication time per iteration (s)"),
           ("network_mbps", "network throughput (Mbit/s)"),
           ("ps_ingress_bytes_per_iter", "PS ingress per iteration (bytes)")]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sweep", choices=("models", "workers"), default="models")
    add_topology(parser, default="fattree:4")
    parser.add_argument("--preset", default="homogeneous")
    parser.add_argument("--ps", type=int, default=None)
    add_scheme(parser, SCHEMES, "inart,atp,lbmm")
    deprecate(parser, "--schemes", "--scheme")
    parser.add_argument("--model", dest="sweep_models",
                        type=names_of(sorted(MODEL_KB), every="all"),
                        default=["lstm", "vgg19", "resnet50"], metavar="MODEL[,MODEL...]",
                        help="the models whose gradient sizes flow (--sweep models; --mode "
                             "train trains mlp): "
                             f"comma-separated from {', '.join(sorted(MODEL_KB))}, or all "
                             "(default lstm,vgg19,resnet50)")
    deprecate(parser, "--models", "--model")
    parser.add_argument("--size-scale", type=float, default=0.02,
                        help="fraction of the paper's per-model gradient size to send")
    parser.add_argument("--workers-list", default="4,8,12",
                        help="worker counts for --sweep workers")
    add_out(parser, "inart-emulation", "the CSV, JSON and PNG files")
    add_seeds(parser, "0", "solver seeds (repetitions)")
    parser.add_argument("--quick", action="store_true",
                        help="fig1, one model, 2 rounds (what the tests run)")
    add_emulation_args(parser, model=False)
    parser.set_defaults(func=run)


def _points(args: argparse.Namespace) -> list[tuple[str, dict]]:
    """(label, options) per sweep point."""
    if args.sweep == "models":
        return [(m, {"values": max(32, int(MODEL_KB[m] * 1024 * args.size_scale / 4))})
                for m in args.sweep_models]
    return [(f"{w} workers", {"workers": int(w)}) for w in args.workers_list.split(",")]


def run(args: argparse.Namespace) -> int:
    if args.quick:
        args.topology, args.preset, args.sweep_models, args.rounds = "fig1", None, ["resnet50"], 2
        args.workers_list = "6"
    schemes = args.scheme
    out = Path(args.out)
    rows: list[dict] = []
    for label, opts in _points(args):
        verdicts = []
        workers = opts.get("workers")
        topo = build_topology(args.topology, ps=args.ps, workers=workers,
                              preset=args.preset if args.topology != "fig1" else None)
        with Emulation(topo, out / label.replace(" ", "-"), args.target, args.scale,
                       impairment(args), args.quiet, fork_server=args.fork_server,
                       switch_cpu_weight=args.switch_cpu_weight) as emu:
            cfg = traffic_config(args, emu.unit_bps)
            if "values" in opts:
                cfg = replace(cfg, values=opts["values"])
            for seed in args.seeds:
                for scheme in schemes:
                    plan = plan_for(topo, scheme, seed)
                    compiled = emu.install(plan)
                    run_ = emu.run(plan, compiled, cfg, f"{scheme}-{seed}")
                    verdicts.append(run_.verdict)
                    rows.append(dict(run_.row, point=label, seed=seed, topology=topo.name,
                                     workers=len(topo.workers), values=cfg.values))
        print(table([r for r in rows if r["point"] == label]))
        ranked = comm_ratios([r for r in rows if r["point"] == label])
        for line in [v.line() for v in verdicts] + ranking_lines(verdicts, ranked):
            print(f"[{label}] {line}")
    write_rows(rows, out, args.sweep)
    plot(rows, out, args.sweep, schemes)
    return 0 if all(r["exact"] is not False for r in rows) else 1


def plot(rows: list[dict], out: Path, sweep: str, schemes: list[str]) -> list[Path]:
    """One grouped bar chart per metric: sweep points x schemes (mean over seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = list(dict.fromkeys(r["point"] for r in rows))
    paths = []
    for key, label in METRICS:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        width = 0.8 / max(1, len(schemes))
        for i, scheme in enumerate(schemes):
            vals = []
            for p in points:
                mine = [r[key] for r in rows if r["point"] == p and r["scheme"] == scheme]
                vals.append(sum(mine) / len(mine) if mine else 0.0)
            ax.bar([j + i * width for j in range(len(points))], vals, width, label=scheme)
        ax.set_xticks([j + width * (len(schemes) - 1) / 2 for j in range(len(points))], points)
        ax.set_ylabel(label)
        ax.legend()
        fig.tight_layout()
        path = out / f"{sweep}-{key}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    return paths
