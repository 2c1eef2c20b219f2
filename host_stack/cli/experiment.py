"""`inart experiment NAME [ARGS]`: reproduce a paper's evaluation (InArt,
selective reduce, PS load balancing) or compare INA with the collectives.

EXPERIMENTS maps a name to (module exposing ``configure(parser)`` that adds the experiment's
options and sets ``func``, one-line help).  Only the chosen module is imported, so a broken
or slow-to-import experiment cannot break the others.  Every experiment takes --out DIR,
--seeds SEEDS (N, N-M or a comma list, as everywhere: 0-2 is three seeds) and --quick (a tiny
grid used by the tests); ``add_common_args`` adds them.
"""

from __future__ import annotations

import argparse
import importlib

from control_plane.cli.args import add_out, add_quiet, add_seeds, call, warn

EXPERIMENTS: dict[str, tuple[str, str]] = {
    "selective": ("host_stack.experiments.selective.experiment",
                  "selective vs partial reduce vs all-reduce across n "
                  "(the selective reduce paper, Figs. 5-6)"),
    "ps-balance": ("host_stack.experiments.psbalance.experiment",
                   "network-aware PS load balancing vs Average/Elastic on tc links "
                   "(Cai et al., ZTE Comm. 2023)"),
    "inart-emulation": ("emulation.experiments.inart_emulation",
                        "InArt/ATP/LBMM on Mininet + P4 switches: rate, comm time, throughput, "
                        "PS ingress per model or worker count (InArt, Figs. 8-13)"),
    "inart-testbed": ("emulation.experiments.inart_testbed",
                      "InArt's testbed figures (rate, throughput, iteration, comm, training "
                      "time, time to accuracy) vs InArt's ratios (Figs. 2-7)"),
    "head-to-head": ("emulation.experiments.head_to_head",
                     "INA (InArt, ATP, LBMM) vs ring, RAT tree and RSGCM training on one "
                     "emulated network: time-to-accuracy, per-iteration split, bytes"),
    "crossover": ("emulation.experiments.crossover",
                  "where INA beats ring, tree and RSGCM: a map over fat-tree size, PSs, link "
                  "speed, host cost and switch presets, simulated on Ray; --emulate: its "
                  "emulable cells emulated and simulated side by side"),
    "multi-job": ("emulation.experiments.multi_job",
                  "two (or more) jobs at once on one emulated network, planned together by "
                  "the controller service: exact sums, each job's rate vs its plan"),
}


def add_common_args(parser: argparse.ArgumentParser, name: str, seeds: int, seeds_help: str,
                    quick_help: str, quiet: bool = True) -> None:
    """--out (default out/NAME), --seeds (default the first ``seeds`` seeds: 0..seeds-1),
    --quick and (``quiet``) -q/--quiet."""
    add_out(parser, name, "the CSV, JSON and PNG files")
    add_seeds(parser, "0" if seeds == 1 else f"0-{seeds - 1}", seeds_help)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    if quiet:
        add_quiet(parser)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `experiment` subcommand."""
    lines = "\n".join(f"  {name:12s} {text}" for name, (_, text) in EXPERIMENTS.items())
    parser = subparsers.add_parser(
        "experiment", help="reproduce a paper's experiment",
        description="Experiments print tables and write CSV/JSON/PNG under --out.\n" + lines,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", choices=sorted(EXPERIMENTS), metavar="EXPERIMENT")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="options of that experiment")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Parse the experiment's own options and run it."""
    module, help_text = EXPERIMENTS[args.experiment]
    parser = argparse.ArgumentParser(prog=f"inart experiment {args.experiment}",
                                     description=help_text)
    importlib.import_module(module).configure(parser)
    exp_args = parser.parse_args(args.args)
    note_seed_count(args.args)
    return call(exp_args.func, exp_args)


def note_seed_count(argv: list[str]) -> None:
    """``--seeds N`` (N > 0) was a count of seeds here before it meant seed N, as it does in
    every command: say so for one release."""
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "--seeds" and value.isdigit() and int(value) > 0:
            warn(f"--seeds {value} is the one seed {value}, as in every command; for "
                 f"{value} seeds give --seeds 0-{int(value) - 1}")
