"""`inart bench NAME [ARGS]`: run the benchmark registered under NAME in cli.BENCHMARKS.

Benchmark modules expose ``configure(parser)``, which adds their options and sets
``func``; only the chosen benchmark's module is imported.
"""

from __future__ import annotations

import argparse
import importlib

from control_plane.cli.args import call
from control_plane.cli.main import BENCHMARKS


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `bench` subcommand."""
    lines = "\n".join(f"  {name:12s} {text}" for name, (_, text) in BENCHMARKS.items())
    parser = subparsers.add_parser(
        "bench",
        help="run a benchmark",
        description="Benchmarks print ratios measured side by side in one run.\n" + lines,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("benchmark", choices=sorted(BENCHMARKS), metavar="BENCHMARK")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="options of that benchmark")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Parse the benchmark's own options and run it."""
    module, help_text = BENCHMARKS[args.benchmark]
    parser = argparse.ArgumentParser(prog=f"inart bench {args.benchmark}", description=help_text)
    importlib.import_module(module).configure(parser)
    bench_args = parser.parse_args(args.args)
    return call(bench_args.func, bench_args)
