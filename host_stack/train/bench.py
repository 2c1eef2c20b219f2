"""`inart bench train`: `inart train --sync ina` beside `--sync ring` and `--sync torch`.

Same machine, plan (fig1's inart plan, solved here), model (``synthetic``: random gradients,
so the round time is the synchronisation alone), seed and rounds, one size after the other
and the three modes in turn for each size.  Round time is the mean over the rounds after the
first (the first also pays for connection set-up and first touches of memory).  Figures, one
line each: round time per mode, the INA/ring ratio (goal <= 1.0) and INA's spurious
retransmissions per round (goal ~ 0, here: at most 1 per round, with no impairment).

``--impair``: INA alone, unimpaired and under each impairment of ``IMPAIRMENTS`` (injected
at every PS's and worker's socket, host_stack/ina/impair.py), in turn, ``--repeat`` times
(by default 5 repetitions of 20-round runs).
Each impaired run sits between two unimpaired runs, and its baseline is their mean, so a
machine whose speed drifts from one run to the next (a shared VM's neighbours) moves both
sides of a ratio alike: on fig1 at 1M values the round times of neighbouring runs correlate
(0.54 over 20 pairs), and the ratios to both neighbours spread by 0.064 (standard
deviation) where ratios to unimpaired runs three runs away spread by 0.084.  Per impairment:
the round time divided by that baseline (the median over repetitions), its goal,
retransmissions and spurious ones per round, and spurious ones as a share of the GRAD
packets of a round.  With reordering alone nothing is lost, so there every retransmission counts as
spurious, whatever the worker could tell.  Reordering holds a packet back ``delay`` seconds,
so a round whose last GRAD and last RESULT are held ends up to two delays later whatever the
transport does: the ``delay_floor`` line is that ratio, about the least an INA transport can
show (an estimate, not a bound: where the round's tail waits for a busy PS anyway, a hold
costs less, and single repetitions at 100k on fig1 show 1.05 under a floor of 1.22).
That floor shrinks as rounds grow, so ``--impair`` runs every size of ``--sizes`` (by default
100k values, where the floor is about 1.2x, and 1M, where it is about 1.02x): the reordering
cost a transport adds shows where the instrument's own hold-back does not hide it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from control_plane.cli.args import add_json, add_quiet, write_json
from control_plane.cli.args import progress as progress_bar
from control_plane.repo import child_env
from host_stack.ina.impair import Impairment
from host_stack.train.launcher import train

MODES = ("ina", "ring", "torch")
# name, --impair, goal: round time at most this many times the unimpaired round's
IMPAIRMENTS = (("loss_0.1%", "loss=0.001", 1.5), ("loss_1%", "loss=0.01", 2.5),
               ("reorder_5%", "reorder=0.05", 1.2),
               ("loss_dup_reorder_5%", "loss=0.05,dup=0.05,reorder=0.05", 5.0))
# --impair's runs in a repetition: each impaired run between two unimpaired ones ("")
IMPAIR_ORDER = ("", *(x for _, i, _ in IMPAIRMENTS for x in (i, "")))
# --impair's defaults: a repetition's ratio moves by ~0.07 (standard deviation) on a 2-core
# VM, so a verdict needs the median of several, and 20-round runs (~9 minutes in all)
ROUNDS, IMPAIR_ROUNDS, IMPAIR_REPEAT = 5, 20, 5
GOAL_REORDER_SPURIOUS = 1.0  # percent of a round's GRAD packets, reordering alone
GOAL_RATIO = 1.0
GOAL_SPURIOUS = 1.0  # per round, all workers together


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="gradient values (--values of --model synthetic; default "
                             "100000 1000000)")
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"rounds per run (>= 2; default {ROUNDS}, with --impair "
                             f"{IMPAIR_ROUNDS})")
    parser.add_argument("--plan", default=None, help="plan file (default: fig1, inart)")
    add_json(parser, "the figures")
    parser.add_argument("--impair", action="store_true",
                        help="INA under loss, reordering and duplication vs unimpaired")
    parser.add_argument("--repeat", type=int, default=IMPAIR_REPEAT,
                        help="--impair: runs of every case, interleaved (ratios: median; "
                             f"default {IMPAIR_REPEAT})")
    add_quiet(parser)
    parser.set_defaults(func=run)


def fig1_plan(workdir: Path) -> str:
    """fig1's inart plan, solved by `inart plan` into ``workdir``."""
    path = workdir / "fig1.json"
    subprocess.run([sys.executable, "-m", "control_plane.cli", "plan", "-t", "fig1", "-s",
                    "inart", "--json", str(path)], check=True, env=child_env(),
                   stdout=subprocess.DEVNULL)
    return str(path)


def one_run(plan: str, mode: str, values: int, rounds: int, impair: str = "") -> dict:
    """Mean round time (rounds after the first) and retransmissions of one `inart train`."""
    from control_plane.cli.main import build_parser

    argv = ["train", "--plan", plan, "--sync", mode, "--model", "synthetic", "--values",
            str(values), "--rounds", str(rounds), "--quiet"]
    if impair:
        argv += ["--impair", impair]
    result = train(build_parser(argv).parse_args(argv))
    rows = result.rounds[1:]
    grads = sum(w.get("counters", {}).get("grad_sent", 0) for w in result.workers)
    return {"mode": mode, "values": values, "rounds": len(rows), "impair": impair,
            "round_s": sum(r["round_s"] for r in rows) / len(rows),
            "retx_per_round": sum(r["retx"] for r in rows) / len(rows),
            "spurious_per_round": sum(r["spurious"] for r in rows) / len(rows),
            "packets_per_round": grads / len(result.rounds)}


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


def impair_figures(runs: list[dict]) -> list[dict]:
    """The labelled lines of ``--impair``, per size: per impairment its round-time ratio to
    the unimpaired round of the same repetition, retransmissions and spurious share."""
    out: list[dict] = []
    for values in sorted({r["values"] for r in runs}):
        out += _impair_figures_of(values, [r for r in runs if r["values"] == values])
    return out


def _impair_figures_of(values: int, runs: list[dict]) -> list[dict]:
    base_s = _baselines(runs)
    base = [r for r in runs if not r["impair"]]
    prefix = f"train/impair/{values}"
    out = [{"name": f"{prefix}/none/round_time", "value": _mean(base, "round_s"),
            "unit": "s", "ratio": None, "goal": None,
            "retx_per_round": _mean(base, "retx_per_round"),
            "spurious_per_round": _mean(base, "spurious_per_round")}]
    for name, impair, goal in IMPAIRMENTS:
        mine = [r for r in runs if r["impair"] == impair]
        ratios = [r["round_s"] / base_s[id(r)] for r in mine]
        ratio = statistics.median(ratios)
        out.append({"name": f"{prefix}/{name}/round_time",
                    "value": _mean(mine, "round_s"), "unit": "s", "ratio": ratio,
                    "goal": f"<= {goal}", "met": ratio <= goal,
                    "ratios": [round(x, 3) for x in ratios]})
        reorder_only = "loss" not in impair and "dup" not in impair
        spurious = _mean(mine, "retx_per_round" if reorder_only else "spurious_per_round")
        share = 100 * spurious / _mean(mine, "packets_per_round")
        out.append({"name": f"{prefix}/{name}/retx", "value":
                    _mean(mine, "retx_per_round"), "unit": "/round", "ratio": None,
                    "goal": None, "spurious_per_round": spurious})
        spur = {"name": f"{prefix}/{name}/spurious", "value": share, "unit": "% pkts",
                "ratio": None, "goal": None}
        if reorder_only:
            spur.update(goal=f"< {GOAL_REORDER_SPURIOUS}", met=share < GOAL_REORDER_SPURIOUS)
        out.append(spur)
        if reorder_only:
            held = 2 * Impairment.parse(impair).delay_s  # the last GRAD's and RESULT's
            floors = [(base_s[id(r)] + held) / base_s[id(r)] for r in mine]
            out.append({"name": f"{prefix}/{name}/delay_floor", "value": held, "unit": "s",
                        "ratio": statistics.median(floors), "goal": None})
    return out


def _baselines(runs: list[dict]) -> dict[int, float]:
    """Per impaired run (by id), the mean round time of the unimpaired runs nearest before
    and after it in its repetition, in the order they ran (one, where it has one side)."""
    out: dict[int, float] = {}
    for k in {r["repeat"] for r in runs}:
        rep = [r for r in runs if r["repeat"] == k]
        for i, r in enumerate(rep):
            if not r["impair"]:
                continue
            before = [b for b in rep[:i] if not b["impair"]][-1:]
            after = [b for b in rep[i + 1:] if not b["impair"]][:1]
            if not before + after:
                raise ValueError(f"repetition {k}: no unimpaired run to compare "
                                 f"{r['impair']} with")
            out[id(r)] = _mean(before + after, "round_s")
    return out


def _mean(runs: list[dict], key: str) -> float:
    return sum(r[key] for r in runs) / len(runs)


def line(f: dict) -> str:
    """One labelled figure; a median over repetitions shows their range after its goal, so
    a reader sees how far runs minutes apart disagree."""
    ratio = "" if f["ratio"] is None else f"ratio {f['ratio']:.2f}"
    goal = "" if f["goal"] is None else (
        f"goal {f['goal']}: {'met' if f['met'] else 'NOT met'}")
    spread = f.get("ratios", [])
    if len(spread) > 1:
        goal += f" (repetitions {min(spread):.2f}-{max(spread):.2f})"
    return f"{f['name']:<44} {f['value']:>10.4g} {f['unit']:<7} {ratio:<12} {goal}"


def run(args: argparse.Namespace) -> int:
    sizes = args.sizes or [100_000, 1_000_000]
    rounds = args.rounds if args.rounds is not None else (
        IMPAIR_ROUNDS if args.impair else ROUNDS)
    if rounds < 2 or any(v < 1 for v in sizes) or args.repeat < 1:
        print("bench train: --rounds >= 2, --sizes >= 1, --repeat >= 1", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="inart-bench-train-") as tmp:
        plan = args.plan or fig1_plan(Path(tmp))
        print(f"plan {plan if args.plan else 'fig1 (inart)'}, --model synthetic, "
              f"{rounds} rounds (mean over rounds 1..{rounds - 1})"
              + (f", {args.repeat} repetition(s), each impaired run between two "
                 "unimpaired ones" if args.impair else ""))
        if args.impair:
            cases = [(values, "ina", impair, k) for values in sizes
                     for k in range(args.repeat) for impair in IMPAIR_ORDER]
        else:
            cases = [(values, mode, "", 0) for values in sizes for mode in MODES]
        runs = [one_run(plan, mode, values, rounds, impair) | {"repeat": k}
                for values, mode, impair, k in progress_bar(cases, desc="bench train", unit="run",
                                                    file=sys.stderr)]
    out = impair_figures(runs) if args.impair else figures(runs)
    for f in out:
        print(line(f))
    if args.json:
        write_json(args.json, {"figures": out, "runs": runs})
    return 0
