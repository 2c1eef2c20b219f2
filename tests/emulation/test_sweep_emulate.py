"""The sweep's emulate kind: emulation points on Ray, one per machine, each under the network
lock, which the points take themselves: run this module WITHOUT `flock /tmp/inart-net.lock`
around it (its test skips when it holds that lock through an inherited descriptor: the points
would wait for it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.sweep.cluster import LocalHead
from control_plane.sweep.engine import run_sweep
from control_plane.sweep.grid import build_grid
from control_plane.sweep.kinds import KINDS
from control_plane.sweep.results import OK
from emulation.sweep_kind import NET_LOCK, net_lock

QUICK = {"rounds": 1, "values": 1500}  # the smallest run that checks sums


def holds_net_lock() -> bool:
    """Whether this process has the network lock open (what `flock FILE pytest` hands down)."""
    fds = Path("/proc/self/fd")
    return any(os.path.realpath(fds / fd) == str(NET_LOCK) for fd in os.listdir(fds))


def test_a_held_lock_fails_the_point_naming_its_holder(tmp_path) -> None:
    lock = tmp_path / "net.lock"
    hold = ("import fcntl, sys, time\n"
            "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(lock)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(TimeoutError, match=f"still held after 0.5 s by pid {holder.pid} "
                                               r"\(.*python.* -c import fcntl"):
            with net_lock(0.5, lock):
                pass
    finally:
        holder.kill()
        holder.wait()
    with net_lock(5, lock):  # free again
        pass


@pytest.mark.root
@pytest.mark.slow
def test_emulation_points_on_ray(needs_mininet_and_program, tmp_path) -> None:
    if holds_net_lock():
        pytest.skip("run without flock: the sweep's emulation points take the lock themselves")
    grid = build_grid({"kind": "emulate", "topologies": "fig1", "schemes": "inart,lbmm",
                       "settings": QUICK}, KINDS)
    with LocalHead(cpus=2) as address:
        outcome = run_sweep(grid, tmp_path, address=address, progress=False)
    assert [r["status"] for r in outcome.rows] == [OK, OK], outcome.rows
    for row in outcome.rows:
        assert row["exact"] is True and row["rounds"] == 1
        assert row["comm_time_s"] > 0 and row["rate_per_worker_bps"] > 0
    assert outcome.rows[0]["rate_units"] == pytest.approx(2.5)
