"""`inart train`: run a training job over a plan on this machine and report it.

    inart train --plan plan.json --model cnn --rounds 200 [--sync ina] [--reference] [--plot]
    inart train --plan plan.json --script my_ddp.py -- SCRIPT_ARGS

With --script, your own PyTorch script runs on every worker (torchrun's environment), its
all-reduces through the plan's PSs once it imports inart.torch (docs/pytorch.md).

Reports per-round time, communication time, sending rate and loss (table; the full report as
OUT/train.json, the per-round table as OUT/train.csv and with --plot a PNG as OUT/train.png,
OUT being --out, default out/train; --json/--csv/--plot PATH put them elsewhere),
final accuracy of every worker, the quantization error, transport counters and, with
--reference, the accuracy of single-process training with the same seed and effective batch.
An option the chosen --sync mode does not use is refused, not ignored.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from pathlib import Path

from control_plane.cli.args import (
    JSON_STDOUT,
    InputError,
    RunFailed,
    add_json,
    add_out,
    add_quiet,
    fresh_out,
    load_plan,
    record_outputs,
    write_json,
)
from host_stack.ddp.script_args import add_script_args, script_arguments
from host_stack.train.hostrun import TrafficError
from host_stack.train.jobargs import (
    add_job_args,
    add_round_args,
    reject_unused,
    track_given,
)
from host_stack.train.launcher import LaunchError, TrainResult, resolve_plan, train
from host_stack.train.sync_registry import MODES, load_sync, mode_flags


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("train", help="train a model over a plan (loopback processes)",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    track_given(p)
    add_job_args(p)
    p.set_defaults(func=run)
    g = p.add_argument_group("run")
    g.add_argument("--sync", default="ina", choices=MODES,
                   help="ina (PSs + switches), ring/tree/rsgcm/torch (collectives), selective")
    g.add_argument("--group-p", type=int, default=0,
                   help="selective: smallest group size p (default 0.3 x workers, >= 2)")
    add_round_args(g)
    g.add_argument("--deadline", type=float, default=1800.0, help="give up after (s)")
    g.add_argument("--checkpoint-dir", default=None, help="PS shards on SIGUSR1")
    g.add_argument("--reference", action="store_true",
                   help="also train single-process with the same seed and effective batch")
    add_out(g, "train", "train.json, train.csv and train.png")
    add_json(g, "the full report (default OUT/train.json)")
    g.add_argument("--csv", type=Path, default=None, metavar="PATH",
                   help="the per-round table as CSV to PATH (default OUT/train.csv)")
    g.add_argument("--plot", type=Path, nargs="?", const=True, default=None,
                   metavar="PNG", help="plot loss, round time and rate per round (to "
                                       "OUT/train.png, or PNG)")
    g.add_argument("--every", type=int, default=0,
                   help="table rows every K rounds (default: about 10 rows)")
    g.add_argument("--keep-logs", action="store_true", help="keep the processes' logs")
    add_script_args(p, "process on loopback, instead of inart's training loop")
    g.add_argument("--fork-server", action="store_true",
                   help="fork the workers from one process that imported torch once (shared "
                        "pages: host_stack/train/forkserver.py) instead of one interpreter each")
    add_quiet(g)


def report(result: TrainResult, every: int) -> dict:
    """Print the table and summary; return the JSON report."""
    rounds = result.rounds
    step = every or max(1, len(rounds) // 10)
    print(f"{'round':>6} {'round_s':>9} {'comm_s':>9} {'Mbit/s':>9} {'retx':>6} {'spur.':>6} "
          f"{'loss':>8}")
    for row in rounds[::step] + ([rounds[-1]] if (len(rounds) - 1) % step else []):
        print(f"{row['round']:>6} {row['round_s']:>9.4f} {row['comm_s']:>9.4f} "
              f"{row['rate_mbps']:>9.2f} {row['retx']:>6} {row['spurious']:>6} "
              f"{row['loss']:>8.4f}")
    n = max(1, len(rounds))
    accs = [w["accuracy"] for w in result.workers]
    digests = {w["params_sha256"] for w in result.workers}
    summary = {
        "workers": result.plan.workers, "ps": len(result.plan.ps_ids), "rounds": len(rounds),
        "wall_s": result.wall_s,
        "mean_round_s": sum(r["round_s"] for r in rounds) / n,
        "mean_comm_s": sum(r["comm_s"] for r in rounds) / n,
        "mean_rate_mbps": sum(r["rate_mbps"] for r in rounds) / n,
        "total_retx": sum(r["retx"] for r in rounds),
        "total_spurious_retx": sum(r["spurious"] for r in rounds),
        "max_quant_rel_error": max((r["quant_rel_error"] for r in rounds), default=0.0),
        "accuracy": accs[0], "workers_agree": len(digests) == 1,
    }
    print(f"mean round {summary['mean_round_s'] * 1e3:.1f} ms, comm "
          f"{summary['mean_comm_s'] * 1e3:.1f} ms, sending rate "
          f"{summary['mean_rate_mbps']:.2f} Mbit/s per worker, retx {summary['total_retx']} "
          f"({summary['total_spurious_retx']} spurious, "
          f"{summary['total_retx'] - summary['total_spurious_retx']} for losses), "
          f"quantization rel. error <= {summary['max_quant_rel_error']:.2e}")
    if accs[0] is not None:
        print(f"test accuracy {accs[0] * 100:.2f}%  (all workers hold identical parameters: "
              f"{summary['workers_agree']})")
    return {"summary": summary, "rounds": rounds, "workers": result.workers,
            "ps": result.ps_stats}


def title(result: TrainResult, sync: str) -> str:
    """What ran: the plan's scheme and PSs where the mode uses PSs, else the mode alone (a
    ring or tree has no PS)."""
    workers = f"{result.plan.workers} workers"
    if not load_sync(sync).USES_PS:
        return f"{sync}: {workers}"
    return f"{result.plan.scheme or 'plan'} ({sync}): {workers}, {len(result.plan.ps_ids)} PSs"


def output_path(args: argparse.Namespace, given: str | Path | bool | None, name: str) -> Path:
    """Where one output goes: the path given, else OUT/name (OUT created; ``-``, stdout, also
    keeps the file in OUT)."""
    if isinstance(given, str | Path) and str(given) != JSON_STDOUT:
        return Path(given)
    args.out.mkdir(parents=True, exist_ok=True)
    return args.out / name


def check_plan(args: argparse.Namespace) -> None:
    """--plan: an existing, readable inart.plan/1 file (or star:W:K), before any process
    starts (InputError: exit 2)."""
    if args.plan is None or str(args.plan).startswith("star:"):
        return
    load_plan(args.plan)


def plot(result: TrainResult, path: Path, sync: str) -> None:
    """Loss, round/communication time and sending rate per round, one panel each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = [row["round"] for row in result.rounds]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    axes[0].plot(r, [row["loss"] for row in result.rounds])
    axes[0].set(xlabel="round", ylabel="mean training loss")
    axes[1].plot(r, [row["round_s"] * 1e3 for row in result.rounds], label="round")
    axes[1].plot(r, [row["comm_s"] * 1e3 for row in result.rounds], label="communication")
    axes[1].set(xlabel="round", ylabel="ms")
    axes[1].legend()
    axes[2].plot(r, [row["rate_mbps"] for row in result.rounds])
    axes[2].set(xlabel="round", ylabel="sending rate per worker (Mbit/s)")
    fig.suptitle(title(result, sync))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_selective(args: argparse.Namespace) -> int:
    """Selective reduce forms groups at run time through its own controller process, so it
    has its own launcher (host_stack/selective/real.py) rather than the per-worker one."""
    from host_stack.experiments.selective.real import train_selective
    from host_stack.ina.jobplan import load_plan

    with tempfile.TemporaryDirectory(prefix="inart-train-") as tmp:
        world = load_plan(resolve_plan(args.plan, Path(tmp))).workers
    p = args.group_p or max(2, round(0.3 * world))
    out = train_selective(args.model, world=world, rounds=args.rounds, p=p, seed=args.seed,
                          lr=args.lr, momentum=args.momentum, batch_size=args.batch,
                          timeout_s=args.deadline)
    keys = ("wall_s", "initial_accuracy", "average_model_accuracy", "syncs", "avg_sync_scale",
            "min_sync_scale", "avg_sync_s", "avg_wait_s")
    print(f"selective reduce, {world} workers, p={p}: " + ", ".join(
        f"{k}={out[k]:.4g}" for k in keys if isinstance(out.get(k), int | float)))
    fresh_out(args.out)
    path = output_path(args, args.json, "train.json")
    path.write_text(json.dumps(out, indent=1, default=str))
    record_outputs(args.out, [path])
    print(f"wrote {path}")
    if args.json == JSON_STDOUT:
        write_json(JSON_STDOUT, json.loads(json.dumps(out, default=str)))
    return 0


# what --script uses: the plan, the INA transport's options and the launcher's
SCRIPT_FLAGS = frozenset({"plan", "script", "script_args", "n", "unit_bps", "pacing", "window",
                          "gso",
                          "timeout", "max_retries", "hello_timeout", "pool_size", "impair",
                          "deadline", "keep_logs", "quiet", "out", "json"})


def run_script(args: argparse.Namespace) -> int:
    """Your script on every worker over the plan's PSs; a one-line summary and the PSs'
    counters (OUT/train.json)."""
    from host_stack.ddp.launch import train_script

    try:
        reject_unused(args, SCRIPT_FLAGS, "ina with --script")
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    args.script_args = script_arguments(args)
    try:
        plan, result = train_script(args)
    except (LaunchError, TrafficError, ValueError) as exc:
        raise RunFailed(str(exc)) from exc
    rounds = {ps: s.get("agg_completed", 0) for ps, s in result.ps_stats.items()}
    print(f"{args.script}: {plan.workers} workers, {len(plan.ps_ids)} PSs "
          f"({plan.scheme or 'plan'}), {result.wall_s:.1f} s; chunks summed per PS: "
          + ", ".join(f"{ps} {n}" for ps, n in rounds.items()))
    fresh_out(args.out)
    path = output_path(args, args.json, "train.json")
    out = {"script": args.script, "script_args": args.script_args, "wall_s": result.wall_s,
           "workers": plan.workers, "ps": result.ps_stats}
    path.write_text(json.dumps(out, indent=1))
    if args.json == JSON_STDOUT:
        write_json(JSON_STDOUT, out)
    record_outputs(args.out, [path])
    return 0


def run(args: argparse.Namespace) -> int:
    if args.script:
        return run_script(args)
    script_arguments(args)
    if args.rounds < 1:
        raise InputError("--rounds: expected an integer >= 1")
    try:
        reject_unused(args, mode_flags(args.sync), args.sync)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    check_plan(args)
    if args.sync == "selective":
        return run_selective(args)
    try:
        result = train(args)
    except (LaunchError, ValueError) as exc:
        raise RunFailed(str(exc)) from exc
    out = report(result, args.every)
    if args.reference and args.model != "synthetic":
        from host_stack.train.reference import reference_training

        acc, _ = reference_training(args.model, result.plan.workers, args.rounds, args.batch,
                                    args.lr, args.momentum, args.seed)
        out["summary"]["reference_accuracy"] = acc
        print(f"single-process reference (same seed, batch {args.batch} x "
              f"{result.plan.workers}): {acc * 100:.2f}%  -> difference "
              f"{(out['summary']['accuracy'] - acc) * 100:+.2f} points")
    fresh_out(args.out)
    written = [output_path(args, args.json, "train.json"), output_path(args, args.csv,
                                                                        "train.csv")]
    written[0].write_text(json.dumps(out, indent=1))
    if args.json == JSON_STDOUT:
        write_json(JSON_STDOUT, out)
    with written[1].open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(result.rounds[0]))
        writer.writeheader()
        writer.writerows(result.rounds)
    if args.plot:
        written.append(output_path(args, args.plot, "train.png"))
        plot(result, written[-1], args.sync)
    record_outputs(args.out, written)
    print(f"wrote {', '.join(map(str, written))}")
    return 0 if out["summary"]["workers_agree"] else 1
