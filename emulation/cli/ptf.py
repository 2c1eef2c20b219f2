"""`inart ptf`: the PTF packet suite (tests/ptf) against a switch target.

    sudo inart ptf --target embedded                       # starts the switch in a netns
    sudo inart ptf --target bmv2 ptf_aggregation.FanIn8
    inart ptf --target tofino --switch 10.0.0.5:9559 --ports ports.yaml   # docs/tofino.md

The options are tests/ptf/run_ptf.py's; this command only finds that runner, so the suite
has one runner from the CLI and from pytest (tests/test_ptf.py).  An installed wheel carries
the suite as package data (control_plane/repo.py PTF_SUITE): checking one's own switch with
the project's packet tests is what `inart ptf --target tofino` is for, checkout or not.
Exit status: ptf's; 77 when the run was skipped (tofino without a switch), with the reason.
"""

from __future__ import annotations

import argparse
import importlib.util
from types import ModuleType

from control_plane.cli.args import command
from control_plane.repo import PTF_SUITE

RUNNER = PTF_SUITE / "run_ptf.py"


def load_runner() -> ModuleType:
    """tests/ptf/run_ptf.py as a module (it is a script beside the PTF tests, not a package)."""
    if not RUNNER.is_file():
        raise SystemExit(f"inart ptf: {RUNNER} is missing: this inart was installed without "
                         f"its PTF suite (a wheel built by `python -m build` carries it)")
    spec = importlib.util.spec_from_file_location("inart_run_ptf", RUNNER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `inart ptf` with the runner's own options."""
    runner = load_runner()
    p = command(subparsers, "ptf", "run the PTF packet suite against a switch target", __doc__)
    runner.add_arguments(p)
    p.set_defaults(func=runner.run)
