"""What a sweep can run: each kind names its runner by string (imported on the worker that
runs the point, so ``control_plane`` imports no emulation or simulation code), the schemes
it takes and the Ray resources one point holds.

A runner is ``run(point: dict, settings: dict, out: str) -> dict``: ``point`` is a
``Point.to_dict()``, ``settings`` the grid's shared settings, ``out`` an absolute directory
of its own for files (on the node that runs it); it returns one flat row of measurements
(numbers and strings).  It raises for a point that cannot run (recorded as failed with the
message, not retried: the same inputs fail again).  New kinds are added to ``KINDS`` (or
passed to ``engine.run_sweep``'s ``kinds``): that is the whole extension point.
"""

from __future__ import annotations

import importlib
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from control_plane.solver.solve import MILP_MAX_FLOWS
from control_plane.solver.solve import SCHEMES as PLAN_SCHEMES

INA_SCHEMES = ("inart", "r-inart", "atp", "lbmm")  # the plans an emulation runs
SIM_SCHEMES = (*INA_SCHEMES, "ring", "tree", "rsgcm")  # simulation.run.SCHEMES
MODELS = "simulation.sweep_kinds:check_model"  # the simulation's model names, for both kinds
EMULATION_RESOURCE = "emulation"  # one per node that may run an emulation (root, Mininet)


@dataclass(frozen=True)
class Kind:
    """A run kind: its runner ("module:function"), its schemes (None: any) and what one point
    holds on the cluster (Ray resources besides one CPU)."""

    name: str
    runner: str
    schemes: tuple[str, ...] | None = None
    # a scheme "all" leaves out where a topology has more worker-PS flows than this (the exact
    # MILP), as `inart plan -s all` does
    exact: tuple[str, int] | None = None
    resources: dict[str, float] = field(default_factory=dict)
    link_gbps: bool = True  # whether the link-speed axis means anything to it
    models: str | None = None  # "module:function" checking a model name (None: no model axis)
    settings: tuple[str, ...] = ()  # the settings its runner reads
    # "module:function" checking the settings when the sweep starts: (settings, topologies)
    # -> the settings as the points get them, ValueError naming the setting
    check: str | None = None
    doc: str = ""


KINDS: dict[str, Kind] = {
    "plan": Kind("plan", "simulation.sweep_kinds:plan", PLAN_SCHEMES,
                 exact=("milp", MILP_MAX_FLOWS),
                 models=MODELS, settings=("k_paths", "trials", "rounding"),
                 doc="solve the topology with the scheme: rate, bound, solve time and the "
                     "communication time the plan promises the model"),
    "simulate": Kind("simulate", "simulation.sweep_kinds:simulate", SIM_SCHEMES,
                     models=MODELS, settings=("iterations", "latency_us", "compute_s", "pace",
                                                 "host_overhead_us"),
                     doc="one iteration simulated on SimGrid (`inart simulate`)"),
    "emulate": Kind("emulate", "emulation.runs.sweep_kind:run", INA_SCHEMES,
                    resources={EMULATION_RESOURCE: 1.0}, link_gbps=False,
                    settings=("scale", "rounds", "values", "deadline_s", "lock_wait_s",
                              "cluster"),
                    check="emulation.runs.sweep_kind:check_settings",
                    doc="the plan on a Mininet network of embedded P4 switches, one emulation "
                        "per machine (links at the scale setting, Mbit/s per unit; over "
                        "several servers with the cluster setting)"),
}


def load_runner(path: str) -> Callable[[dict, dict, str], dict]:
    """The function a "module:function" string names."""
    module, _, function = path.partition(":")
    return getattr(importlib.import_module(module), function)


def run_point(runner: str, point: dict[str, Any], settings: dict[str, Any],
              out: str) -> dict[str, Any]:
    """Run one point where it was scheduled; the row gets the node and the wall time."""
    start = time.monotonic()
    os.makedirs(out, exist_ok=True)
    row = load_runner(runner)(point, settings, out)
    return {**row, "node": socket.gethostname(), "wall_s": round(time.monotonic() - start, 3)}
