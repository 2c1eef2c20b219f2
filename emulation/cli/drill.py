"""`inart drill`: failure drills on a fig1 emulation with a job under `inart serve`.

Each drill starts a fig1 Mininet network of embedded switches and its own `inart serve`,
runs one synthetic job (every round's sums checked against numpy on every worker), injects
its fault in a round the seed picks, and prints one line: the drill, ok or FAILED, the
outcome (exact: the job finished with exact sums; named-error: every surviving worker ended
with the same named error), the time to recover from the fault and the round time before it.
Nothing may be left behind (switch interfaces, processes); every drill has a deadline and
fails past it.  What each drill promises: docs/reliability.md.

  sudo inart drill                            # every drill, seed 0
  sudo inart drill switch-restart --seed 3    # one drill, another fault round
  sudo inart drill --json drills.json
"""

from __future__ import annotations

import argparse
import sys

from control_plane.cli.args import (
    InputError,
    RunFailed,
    add_json,
    add_out,
    add_quiet,
    command,
    fresh_out,
    names_of,
    positive,
    record_outputs,
    write_json,
)
from emulation.network.mininet_net import mininet_available
from emulation.runs.drills.drill import run_drills
from emulation.runs.drills.outcome import DRILLS

NAMES = tuple(DRILLS)


def add_drill_arguments(p: argparse.ArgumentParser) -> None:
    """The drills to run and their seed, deadline and rounds (`inart drill`, `inart bench
    drill`)."""
    p.add_argument("drills", nargs="?", type=names_of(NAMES, every="all"), default=list(NAMES),
                   metavar="DRILL[,DRILL...]",
                   help=f"comma-separated from {', '.join(NAMES)}, or all (default all)")
    p.add_argument("--seed", type=int, default=0,
                   help="the fault's round, victim and delay (default 0)")
    p.add_argument("--deadline", type=positive(float), default=180.0,
                   help="seconds per drill; past it the drill fails (default 180)")
    p.add_argument("--rounds", type=positive(int), default=12,
                   help="rounds of each drill's job (default 12; at least 6)")


def check_drill_arguments(args: argparse.Namespace, command: str) -> None:
    """What argparse cannot check, before any network starts."""
    if args.rounds < 6:
        raise InputError(f"argument --rounds: {args.rounds}: expected at least 6 (the fault "
                         f"comes in a round with three after it)")
    reason = mininet_available()
    if reason:
        raise RunFailed(f"{command} needs Mininet: {reason}")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = command(subparsers, "drill", "failure drills on a fig1 emulation under `inart serve`",
                __doc__)
    add_drill_arguments(p)
    add_json(p, "every drill's result")
    add_out(p, "drill", "each drill's logs and drill.json")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_drill_arguments(args, "inart drill")
    out = fresh_out(args.out)

    def show(result) -> None:
        print(result.line(), flush=True)

    results = run_drills(args.drills, args.seed, args.deadline, out, args.rounds, show,
                         args.quiet)
    data = [r.to_dict() for r in results]
    write_json(out / "drill.json", data)
    record_outputs(out, [out / "drill.json"])  # each drill replaces its own folder
    if args.json:
        write_json(args.json, data)
    failed = [r.drill for r in results if not r.ok]
    if failed:
        print(f"inart drill: failed: {', '.join(failed)} (logs under {out})", file=sys.stderr)
        return 1
    return 0
