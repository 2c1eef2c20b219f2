"""The files in examples/ work as their comments say: every topology loads and plans, and the
`ctl` session script runs against a real `inart serve` on loopback."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from control_plane.model.topologies import build_topology
from control_plane.repo import REPO, child_env
from control_plane.solver.solve import solve

EXAMPLES = REPO / "examples"
TOPOLOGIES = sorted(p for p in EXAMPLES.glob("*.yaml")
                    if "nodes:" in p.read_text() and "links:" in p.read_text())


def test_there_are_topology_examples() -> None:
    assert {p.name for p in TOPOLOGIES} >= {"leafspine-heterogeneous.yaml",
                                             "irregular-graph.yaml"}


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.name)
def test_an_example_topology_plans(path) -> None:
    """Loaded through the one builder, planned by InArt and ATP; InArt is never behind ATP,
    and each example has the shape its comment promises."""
    topo = build_topology(str(path))
    assert len(topo.workers) >= 6 and len(topo.pss) == 2
    inart, atp = solve(topo, "inart", seed=0), solve(topo, "atp", seed=0)
    assert inart.rate > 0 and inart.rate >= atp.rate - 1e-9
    switch_caps = {topo.nodes[v].capacity for v in topo.switches}
    link_caps = {lk.capacity for lk in topo.links.values()}
    assert len(switch_caps) > 1 and len(link_caps) > 1  # heterogeneous, as described


def test_the_ctl_session_script_runs_against_a_real_service() -> None:
    env = child_env() | {"INART": f"{shlex.quote(sys.executable)} -m control_plane.cli"}
    run = subprocess.run(["sh", str(EXAMPLES / "ctl-session.sh")], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "job 1 running: 6 workers, 2 PSs" in out
    assert "job 1: new_version - version 2" in out and "cut off: w1" in out
    assert "event 1 link_down w1 <-> v1" in out  # the watcher saw the event
    assert "job 1: new_version - version 3" in out  # back on every worker
    pid = next(line.split()[-1].rstrip(")") for line in out.splitlines()
               if line.startswith("listening on "))
    assert not os.path.exists(f"/proc/{int(pid)}")  # the script stopped the service
