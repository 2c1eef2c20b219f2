"""With training the first worker to finish computing waits for the last before its chunks can
aggregate: the verdict judges the rate once every worker sends (the last starter's), not the
workers' mean, which counts that wait; both are reported."""

from __future__ import annotations

import pytest

from emulation.experiments.head_to_head import summarize
from emulation.measure.metrics import all_sending_rate
from host_stack.train.hostrun import JobResult


def _rec(compute: float, sync: float, nbytes: int = 125_000) -> dict:
    return {"compute_s": compute, "sync_s": sync, "bytes": nbytes, "loss": 1.0}


# fig1-like round: w2 finished computing 1.3 s before the others and waited for them
ROUNDS = {"w1": [_rec(0.1, 1.0), _rec(1.4, 1.0)],
          "w2": [_rec(0.1, 1.0), _rec(0.1, 2.3)],
          "w3": [_rec(0.1, 1.0), _rec(1.4, 1.05)]}


def test_the_rate_is_the_last_starters_once_every_worker_sends():
    # round 0 (start-up) left out; round 1: w1 started last (ties: the shorter sync)
    assert all_sending_rate(list(ROUNDS.values())) == pytest.approx(1.0)
    assert all_sending_rate(list(ROUNDS.values()), first=0) == pytest.approx(1.0)
    assert all_sending_rate([[{"comm_s": 1.0, "bytes": 1}]], first=0) is None  # no compute


def test_the_head_to_head_row_keeps_the_mean_beside_the_judged_rate():
    job = JobResult(rounds=ROUNDS, done={w: {"accuracy": 0.5, "params_sha256": "x"}
                                         for w in ROUNDS}, ps_stats={}, chunks={}, wall_s=1.0)
    row = summarize("inart", 0, job, 0, 0, 0, 0, 0.9, 32)
    assert row["rate_all_sending_mbps"] == pytest.approx(1.0)
    assert row["rate_mbps"] < 0.8  # w2's 0.43 pulls the mean down


def test_emulate_rows_judge_training_on_the_last_starter_and_synthetic_on_the_mean():
    from control_plane.model.topologies import build_topology
    from control_plane.solver.solve import plan_for
    from emulation.measure.metrics import summarize as emulate_row
    from host_stack.train.hostrun import TrafficConfig

    plan = plan_for(build_topology("fig1"), "inart", 0)
    job = JobResult(rounds=ROUNDS, done={}, ps_stats={}, chunks={}, wall_s=1.0)
    unit = 1e6 / plan.rate  # plan rate 1 Mbit/s per worker
    train = emulate_row(plan, job, TrafficConfig(mode="train", unit_bps=unit), 0, 0, {})
    assert train["rate_ratio"] == pytest.approx(1.0) and train["plan_ratio"] == pytest.approx(1.0)
    assert train["rate_ratio_mean"] < 0.8
    synthetic = emulate_row(plan, job, TrafficConfig(unit_bps=unit), 0, 0, {})
    assert synthetic["rate_ratio"] == pytest.approx(synthetic["rate_ratio_mean"])
    assert synthetic["rate_ratio"] < 0.8
    assert synthetic["rate_all_sending_mbps"] is None
