"""`--switch-cpu-weight` on a real emulation: every switch process (the farm's children too)
runs in the switches' cgroup, this process and what it starts (PSs, workers) in the hosts',
the runs' rows say so, and nothing is left behind when the network goes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from control_plane.model.topologies import build_topology
from control_plane.solver.solve import plan_for
from emulation.measure.resources import descendants
from emulation.network import cpu_isolation
from emulation.network.cpu_isolation import IsolationError, find_hierarchy
from emulation.runs.emulate import Emulation
from host_stack.train.hostrun import TrafficConfig

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet_and_program")]


def _group(pid: int, version: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        num, controllers, path = line.split(":", 2)
        if (num == "0") if version == 2 else "cpu" in controllers.split(","):
            return path
    return ""


def test_switches_and_hosts_run_in_their_weighted_groups(tmp_path):
    try:
        hier = find_hierarchy(cpu_isolation.MOUNTS.read_text())
    except IsolationError as exc:
        pytest.skip(str(exc))
    mine = _group(os.getpid(), hier.version)
    topo = build_topology("fig1")
    plan = plan_for(topo, "inart", 0)
    with Emulation(topo, tmp_path, scale=0.25, quiet=True, switch_cpu_weight=800) as emu:
        assert emu.isolation is not None, emu.isolation_note
        base = "/" + str(emu.isolation.base.relative_to(hier.root))
        switches = descendants(emu.net.switch_pids())
        assert len(switches) > len(topo.switches)  # the farm and its forked switches
        assert {_group(p, hier.version) for p in switches} == {f"{base}/switches"}
        assert _group(os.getpid(), hier.version) == f"{base}/hosts"
        cfg = TrafficConfig(rounds=2, values=32 * 600, unit_bps=emu.unit_bps, deadline_s=120)
        row = emu.run(plan, emu.install(plan), cfg, "inart").row
        assert row["exact"] is True
        assert row["cpu_isolation"].startswith("switches weight 800 : hosts 100 (cgroup v")
        group = emu.isolation.base
    assert not group.exists()
    assert _group(os.getpid(), hier.version) == mine
