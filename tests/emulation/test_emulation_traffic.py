"""The traffic runner with real PS and worker processes, on loopback instead of Mininet hosts.

One worker, so the PS's single RESULT to the "result address" (here the worker itself) is all
the replication needed: this checks the host plan (ranks, paced rate), the processes' options,
the digest check of every round's sums and the metrics, without switches.  The same runner
inside Mininet is covered by test_emulation_e2e.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import pytest

from control_plane.deploy.addressing import assign
from control_plane.deploy.entries import compile_plan
from control_plane.model.topology import Link, Node, Topology
from control_plane.repo import REPO, child_env
from control_plane.solver.solve import solve
from emulation.measure.metrics import summarize
from host_stack.train.hostrun import TrafficConfig, run_job


class LoopbackHosts:
    """Runs each 'host' process directly on this machine (unit-test stand-in for Mininet)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def popen(self, host: str, cmd: list[str], env: dict[str, str] | None = None,
              **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, env=child_env(PYTHONUNBUFFERED="1", **(env or {})),
                                cwd=REPO, **kwargs)
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


def test_run_job_checks_every_round_and_measures(tmp_path):
    nodes = [Node("w1", "worker"), Node("s1", "ps", 8), Node("s2", "ps", 8),
             Node("v1", "switch", 8)]
    pairs = [("w1", "v1"), ("s1", "v1"), ("s2", "v1")]
    topo = Topology(nodes, [Link(a, b, 8) for p, q in pairs for a, b in ((p, q), (q, p))])
    plan = solve(topo, "lbmm", 0)
    addr = assign(topo)
    base = 100 + os.getpid() % 100
    addr = replace(addr, ip={"w1": f"127.77.{base}.2", "s1": f"127.77.{base}.3",
                             "s2": f"127.77.{base}.4"})
    compiled = replace(compile_plan(plan, assign(topo)), result_addr=addr.ip["w1"])
    # 1 Mbit/s per unit: f = 8 units -> 8 Mbit/s (~6k packets/s), which a Python sender keeps
    # up even on a loaded 2-core machine; the check is the pacing, not the sender's speed
    unit = 1e6
    # 1000 chunks per PS and round: the last RESULT's round trip is < 10% of it
    cfg = TrafficConfig(rounds=3, values=32 * 2000, unit_bps=unit, deadline_s=120)
    hosts = LoopbackHosts()
    try:
        job = run_job(hosts, addr, plan, compiled, cfg, tmp_path, quiet=True)
    finally:
        hosts.close()
    assert job.exact is True, job.mismatches
    assert set(job.chunks) == {"s1", "s2"} and sum(job.chunks.values()) == 2000
    row = summarize(plan, job, cfg, link_total=0, ps_ingress=0, switch_events={})
    assert row["rounds"] == 3 and row["exact"] is True
    assert 0.85 <= row["rate_ratio"] <= 1.15, row  # paced at the plan's f
    assert row["plan_ratio"] == pytest.approx(row["rate_ratio"])
    # paced at half the plan (`--pace 0.5`): the same rate is twice the paced, half the plan's
    half = summarize(plan, job, replace(cfg, rate_factor=0.5), link_total=0, ps_ingress=0,
                     switch_events={})
    assert half["rate_ratio"] == pytest.approx(2 * row["rate_ratio"])
    assert half["plan_ratio"] == pytest.approx(row["plan_ratio"])
    assert row["comm_s"] > 0 and 0.75 <= row["comm_ratio"] <= 1.25, row
    assert sys.executable  # the processes ran under this interpreter
