"""A simulation's child process keeps SimGrid's actor threads on one CPU."""

from __future__ import annotations

import os

import pytest

from simulation.engine import in_child


def test_the_simgrid_child_runs_on_one_of_our_cpus() -> None:
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        pytest.skip("one CPU: nothing to pin")
    pinned = in_child(os.sched_getaffinity, 0)
    assert len(pinned) == 1 and pinned <= cpus
    assert os.sched_getaffinity(0) == cpus  # the parent is left as it was
