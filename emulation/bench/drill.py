"""`inart bench drill`: each failure drill's recovery time and outcome, one labelled line each.

Runs the drills of `inart drill` (fig1 Mininet network of embedded switches, a job under
`inart serve`, one seeded fault) one after another and prints, per drill, the time from the
fault to the job's recovery (or, for the faults that end the job, to the last worker's named
error) against the drill's deadline, with the round time measured before the fault in the
same run beside it (recovery in rounds).  A drill meets its goal when it kept its promise
(docs/reliability.md), left nothing behind and ended within its deadline; one that hangs fails
at the deadline, loudly.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path

from control_plane.bench.figures import figure, line
from control_plane.cli.args import add_json, add_quiet, write_json
from emulation.cli.drill import add_drill_arguments, check_drill_arguments
from emulation.runs.drills.drill import run_drills
from emulation.runs.drills.outcome import PROMISES, DrillResult


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_drill_arguments(parser)
    add_json(parser, "the figures")
    add_quiet(parser)
    parser.set_defaults(func=run)


def drill_figure(result: DrillResult, deadline_s: float) -> dict:
    """The drill's recovery time against its deadline; met only if it kept its promise."""
    value = math.nan if result.recovery_s is None else result.recovery_s
    fig = figure(f"drill.recovery[{result.drill}]", value, "s", ("<=", deadline_s),
                 outcome=result.outcome, promised=PROMISES[result.drill],
                 round_s=None if result.round_s is None else round(result.round_s, 3),
                 in_rounds=None if result.round_s is None or result.recovery_s is None
                 else round(result.recovery_s / result.round_s, 1),
                 fault=result.fault, seed=result.seed, wall_s=round(result.wall_s, 1),
                 load=round(os.getloadavg()[0], 2))
    fig["met"] = bool(fig["met"] and result.ok)
    if result.error:
        fig["error"] = result.error
    if not result.ok:
        fig["why"] = result.detail or f"left behind: {', '.join(result.leftovers)}"
    return fig


def run(args: argparse.Namespace) -> int:
    check_drill_arguments(args, "inart bench drill")
    figures = []

    def show(result: DrillResult) -> None:
        figures.append(drill_figure(result, args.deadline))
        print(line(figures[-1]), flush=True)

    with tempfile.TemporaryDirectory(prefix="inart-bench-drill-") as tmp:
        run_drills(args.drills, args.seed, args.deadline, Path(tmp), args.rounds, show,
                   args.quiet)
    if args.json is not None:
        write_json(args.json, figures)
    return 0 if all(f["met"] for f in figures) else 1
