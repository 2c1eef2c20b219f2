# PYTHON_ARGCOMPLETE_OK
"""The `inart` command line: one dispatcher, subcommands owned by the part that implements them.

Each part registers its subcommands in a module that exposes ``register(subparsers)``.  The
dispatcher names those modules by string and imports only the one a user asks for, so
``control_plane`` has no import-time dependency on ``emulation`` or ``host_stack`` (DESIGN.md
section 1), and a part that is broken or absent cannot break the others' commands.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from collections.abc import Callable, Sequence

# subcommand -> (module defining register(subparsers), one-line help); "module:function" names
# another function than register (one module may define several commands)
COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("control_plane.cli.plan", "solve a topology with InArt and its baselines"),
    "install": ("control_plane.cli.install", "install a plan onto running P4 switches"),
    "uninstall": ("control_plane.cli.install:register_uninstall",
                  "remove exactly a plan's entries from running P4 switches"),
    "bench": ("control_plane.cli.bench", "run a benchmark (solver, target, transport, ...)"),
    "demo": ("emulation.cli.demo", "run the main demo (fig1 planned and emulated)"),
    "experiment": ("host_stack.cli.experiment", "reproduce a paper's experiment (InArt, ...)"),
    "train": ("host_stack.cli.train", "train a model over a plan (PS + worker processes)"),
    "emulate": ("emulation.cli.emulate", "run schemes on a Mininet network of P4 switches"),
    "drill": ("emulation.cli.drill", "failure drills on a fig1 emulation under `inart serve`"),
    "simulate": ("simulation.cli.simulate", "simulate schemes on SimGrid at real link speeds"),
    "shell": ("emulation.cli.shell", "p4runtime-shell on a P4Runtime switch"),
    "switch": ("emulation.cli.switch", "run one P4 switch (embedded target or bmv2) alone"),
    "ptf": ("emulation.cli.ptf", "run the PTF packet suite (embedded, bmv2, tofino)"),
    "serve": ("control_plane.cli.serve", "run the controller service (gRPC API, re-planning)"),
    "ctl": ("control_plane.cli.ctl", "talk to a running `inart serve`"),
    "run": ("realhosts.cli.run", "run a job on real hosts and switches (inventory file)"),
    "lab": ("realhosts.cli.lab", "namespace hosts and standalone switches here, for `inart run`"),
    "sweep": ("control_plane.cli.sweep",
              "run a grid of plans, simulations or emulations in parallel (Ray)"),
}

# `inart bench NAME` -> (module exposing configure(parser), one-line help)
BENCHMARKS: dict[str, tuple[str, str]] = {
    "solver": ("control_plane.bench.solver", "solve time and rate of each scheme on fat-trees"),
    "collectives": ("host_stack.collectives.bench", "ring, RAT tree, RSGCM vs torch all_reduce"),
    "message-overhead": ("host_stack.collectives.bench_overhead",
                         "gloo's host time per message (ping-pong between namespaces)"),
    "target": ("emulation.targets.embedded.bench", "embedded P4 target pkt/s and RSS, beside bmv2"),
    "transport": ("host_stack.ina.bench_transport",
                  "INA transport vs iperf3 and a Python UDP sender (loopback, veth)"),
    "train": ("host_stack.train.bench", "inart train: INA vs ring and torch round time (fig1)"),
    "memory": ("emulation.bench.memory",
               "fattree:6 peak memory with CNN workers: fork server vs one interpreter each"),
    "simulate": ("simulation.bench", "inart simulate: wall time and memory on fat-trees, "
                 "sim/plan"),
    "pacing": ("emulation.bench.pacing",
               "INA sent/plan rate, user vs kernel pacing, idle vs loaded (Mininet)"),
    "controller": ("control_plane.bench.controller",
                   "install entries/s vs p4runtime-shell (embedded, bmv2); replan latency"),
    "ddp": ("host_stack.ddp.bench",
            "PyTorch DDP: backend inart vs gloo (all_reduce, ResNet-18 steps, fig1 emulation)"),
    "calibrate": ("emulation.bench.calibrate",
                  "the flow-level simulation against the emulation's head-to-head"),
    "observe": ("emulation.bench.observe",
                "metrics and web view: their cost to an emulation's round time (Mininet)"),
    "drill": ("emulation.bench.drill",
              "failure drills: each one's recovery time and outcome (Mininet, inart serve)"),
}


def load_register(module: str) -> Callable[[argparse._SubParsersAction], None]:
    """Import a command module and return its ``register`` (or the named) function."""
    name, _, function = module.partition(":")
    return getattr(importlib.import_module(name), function or "register")


def version() -> str:
    """The installed distribution's version (package metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("inart")
    except PackageNotFoundError:  # a checkout run without installing it
        return "unknown (not installed)"


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """Build the parser, importing only the module of the requested subcommand (every other
    command is a stub with its name and help: enough for `inart --help` and completion)."""
    parser = argparse.ArgumentParser(
        prog="inart", description="In-network aggregation testbed with P4 switches. "
                                  "The options' grammar: docs/cli.md."
    )
    parser.add_argument("--version", action="version", version=f"inart {version()}")
    # not "command": a subcommand may have an option of that name (`inart shell -c`)
    sub = parser.add_subparsers(dest="inart_command", metavar="COMMAND", required=True)
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        if name == wanted:
            load_register(module)(sub)
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def completion_argv() -> list[str] | None:
    """Under shell completion (argcomplete sets _ARGCOMPLETE), the words typed so far after
    `inart`, so the subcommand being completed gets its real parser; else None."""
    if "_ARGCOMPLETE" not in os.environ:
        return None
    line = os.environ.get("COMP_LINE", "")[:int(os.environ.get("COMP_POINT", "0") or 0)]
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    # the last word is being completed (a subcommand name is still a prefix then)
    done = words[1:] if line.endswith(" ") else words[1:-1]
    return done


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``inart`` console script.  Exit status: 0 done, 1 a run that
    started and failed, 2 bad arguments or input files (one line on stderr either way)."""
    from control_plane.cli.args import InputError, RunFailed, call

    completing = completion_argv()
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv if completing is None else completing)
    if completing is not None:
        import argcomplete

        argcomplete.autocomplete(parser)
    args = parser.parse_args(argv)
    # `inart bench NAME` and `inart experiment NAME` parse NAME's options in their own run
    prog = " ".join(["inart", args.inart_command] + [
        n for n in (getattr(args, "benchmark", None), getattr(args, "experiment", None))
        if isinstance(n, str)])
    try:
        return call(args.func, args)
    except InputError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except RunFailed as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
