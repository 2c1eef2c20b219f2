"""Training workers forked from the fork server into their Mininet hosts train exactly as
workers started through mnexec: every synthetic sum exact, and the same final parameters
(bit for bit) after real CNN rounds, with and without the server.  A forked worker that had
not joined its host's network namespace could not bind its host's address (10.1.x.y exists
in that namespace only) and would exit with status 2: the runs finishing is that check here
(tests/test_forkserver.py compares the namespace inode itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from control_plane.model.topologies import fig1
from control_plane.solver.solve import plan_for
from emulation.runs.emulate import Emulation
from host_stack.train.forkserver import ForkedProcess
from host_stack.train.hostrun import TrafficConfig

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet_and_program")]
SCALE = 0.25


def train_once(out: Path, fork_server: bool) -> dict[str, dict]:
    """fig1's inart plan: two synthetic rounds (sums checked), then two CNN rounds; the
    workers' final records of the CNN run."""
    topo = fig1()
    with Emulation(topo, out, "embedded", SCALE, quiet=True, fork_server=fork_server) as emu:
        plan = plan_for(topo, "inart", 0)
        compiled = emu.install(plan)
        synthetic = emu.run(plan, compiled, TrafficConfig(rounds=2, values=32 * 150,
                                                          unit_bps=emu.unit_bps,
                                                          deadline_s=300), "synthetic")
        assert synthetic.row["exact"] is True
        forked = [p for p in emu.net.procs if isinstance(p, ForkedProcess)]
        assert len(forked) == (len(topo.workers) if fork_server else 0)
        emu.install(plan)
        cnn = emu.run(plan, compiled, TrafficConfig(mode="train", model="cnn", rounds=2,
                                                    unit_bps=emu.unit_bps, deadline_s=300),
                      "cnn")
        assert cnn.row["host_pss_mb"] > 0
        if fork_server:
            assert emu.net.forks is not None and emu.net.forks.pid is not None
    return cnn.job.done


def test_forked_workers_train_exactly_like_plain_ones(tmp_path):
    forked = train_once(tmp_path / "forked", fork_server=True)
    plain = train_once(tmp_path / "plain", fork_server=False)
    assert sorted(forked) == sorted(plain) == sorted(fig1().workers)
    digests = {rec["params_sha256"] for rec in forked.values()}
    assert len(digests) == 1  # every worker holds the same parameters
    assert digests == {rec["params_sha256"] for rec in plain.values()}
    assert {w: r["accuracy"] for w, r in forked.items()} == \
        {w: r["accuracy"] for w, r in plain.items()}
