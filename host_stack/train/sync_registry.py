"""`--sync NAME` -> the module that implements that synchronisation scheme.

Modules are imported only when chosen (like the CLI's COMMANDS), so a scheme with heavy or
missing dependencies never breaks the others.  A scheme module exposes:
- ``FLAGS: frozenset[str]`` - the `inart train` options it uses (dests; host_stack/train/
  jobargs.py has the shared sets), so `inart train` can refuse the others;
- ``USES_PS: bool`` - whether the launcher must start the plan's PS processes;
- ``build(ctx: WorkerContext) -> MeasuredSync`` - the worker side for one worker, recording
  what every step sent (host_stack/train/sync.py).
`inart train` runs a mode in ``OWN_LAUNCHER`` its own way (with that module's ``FLAGS``).
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from types import ModuleType

SYNCS: dict[str, str] = {
    "ina": "host_stack.ina.sync",
    "ring": "host_stack.collectives.scheme",
    "tree": "host_stack.collectives.scheme",
    "rsgcm": "host_stack.collectives.scheme",
    "torch": "host_stack.collectives.scheme",
    # a worker whose groups a coordinator process on another host forms (emulation)
    "selective": "host_stack.experiments.selective.selective_sync",
}


@dataclass
class WorkerContext:
    """What a scheme gets to set itself up for one worker."""

    job: object  # host_stack.train.jobargs.Job
    args: argparse.Namespace
    worker: str
    rank: int
    service: object = None  # host_stack.ina.follow.ServiceLink when the job follows one


# `inart train` runs these its own way: selective reduce's controller lives in its launcher
OWN_LAUNCHER: dict[str, str] = {"selective": "host_stack.experiments.selective.real"}
MODES = sorted({*SYNCS, *OWN_LAUNCHER})


def mode_flags(name: str) -> frozenset[str]:
    """The `inart train` options (dests) that mode ``name`` uses."""
    return importlib.import_module({**SYNCS, **OWN_LAUNCHER}[name]).FLAGS


def load_sync(name: str) -> ModuleType:
    """Import the scheme registered as ``name`` (clear error for unknown names)."""
    if name not in SYNCS:
        raise ValueError(f"--sync {name!r}: expected one of {', '.join(sorted(SYNCS))}")
    return importlib.import_module(SYNCS[name])
