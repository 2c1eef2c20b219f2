"""`inart bench train`: `inart train --sync ina` beside `--sync ring` and `--sync torch`.

Same machine, plan (fig1's inart plan, solved here), model (``synthetic``: random gradients,
so the round time is the synchronisation alone), seed and rounds, one size after the other
and the three modes in turn for each size.  Round time is the mean over the rounds after the
first (the first also pays for connection set-up and first touches of memory).  Figures, one
line each: round time per mode, the INA/ring ratio (goal <= 1.0) and INA's spurious
retransmissions per round (goal ~ 0, here: at most 1 per round, with no impairment).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from control_plane.repo import child_env
from host_stack.train.launcher import train

MODES = ("ina", "ring", "torch")
GOAL_RATIO = 1.0
GOAL_SPURIOUS = 1.0  # per round, all workers together


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000],
                        help="gradient values (--values of --model synthetic)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per run (>= 2)")
    parser.add_argument("--plan", default=None, help="plan file (default: fig1, inart)")
    parser.add_argument("--json", default=None, help="write the figures as JSON here")
    parser.set_defaults(func=run)


def fig1_plan(workdir: Path) -> str:
    """fig1's inart plan, solved by `inart plan` into ``workdir``."""
    path = workdir / "fig1.json"
    subprocess.run([sys.executable, "-m", "control_plane.cli", "plan", "-t", "fig1", "-s",
                    "inart", "--json", str(path)], check=True, env=child_env(),
                   stdout=subprocess.DEVNULL)
    return str(path)


def one_run(plan: str, mode: str, values: int, rounds: int) -> dict:
    """Mean round time (rounds after the first) and retransmissions of one `inart train`."""
    from control_plane.cli.main import build_parser

    argv = ["train", "--plan", plan, "--sync", mode, "--model", "synthetic", "--values",
            str(values), "--rounds", str(rounds), "--quiet"]
    rows = train(build_parser(argv).parse_args(argv)).rounds[1:]
    return {"mode": mode, "values": values, "rounds": len(rows),
            "round_s": sum(r["round_s"] for r in rows) / len(rows),
            "retx_per_round": sum(r["retx"] for r in rows) / len(rows),
            "spurious_per_round": sum(r["spurious"] for r in rows) / len(rows)}


def figures(runs: list[dict]) -> list[dict]:
    """The labelled lines: round time per mode and size, INA/ring ratio, spurious per round."""
    out = []
    by = {(r["mode"], r["values"]): r for r in runs}
    for values in sorted({r["values"] for r in runs}):
        for mode in MODES:
            r = by[(mode, values)]
            out.append({"name": f"train/{values}/{mode}/round_time", "value": r["round_s"],
                        "unit": "s", "ratio": None, "goal": None})
        ina, ring = by[("ina", values)], by[("ring", values)]
        out.append({"name": f"train/{values}/ina_vs_ring", "value": ina["round_s"],
                    "unit": "s", "ratio": ina["round_s"] / ring["round_s"],
                    "goal": f"<= {GOAL_RATIO}",
                    "met": ina["round_s"] / ring["round_s"] <= GOAL_RATIO})
        out.append({"name": f"train/{values}/ina/spurious_retx", "value":
                    ina["spurious_per_round"], "unit": "/round", "ratio": None,
                    "goal": f"<= {GOAL_SPURIOUS}",
                    "met": ina["spurious_per_round"] <= GOAL_SPURIOUS,
                    "retx_per_round": ina["retx_per_round"]})
    return out


def line(f: dict) -> str:
    ratio = "" if f["ratio"] is None else f"ratio {f['ratio']:.2f}"
    goal = "" if f["goal"] is None else (
        f"goal {f['goal']}: {'met' if f['met'] else 'NOT met'}")
    return f"{f['name']:<34} {f['value']:>10.4g} {f['unit']:<7} {ratio:<12} {goal}"


def run(args: argparse.Namespace) -> int:
    if args.rounds < 2 or any(v < 1 for v in args.sizes):
        print("bench train: --rounds >= 2, --sizes >= 1", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="inart-bench-train-") as tmp:
        plan = args.plan or fig1_plan(Path(tmp))
        print(f"plan {plan if args.plan else 'fig1 (inart)'}, --model synthetic, "
              f"{args.rounds} rounds (mean over rounds 1..{args.rounds - 1})")
        runs = [one_run(plan, mode, values, args.rounds)
                for values in args.sizes for mode in MODES]
    out = figures(runs)
    for f in out:
        print(line(f))
    if args.json:
        Path(args.json).write_text(json.dumps({"figures": out, "runs": runs}, indent=1))
    return 0
