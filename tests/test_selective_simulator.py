"""Selective reduce simulator: Eq. 2 timing, fair sharing, scale invariants, experiment CLI."""

from __future__ import annotations

import csv
import random

import pytest

from control_plane.cli.main import main
from host_stack.experiments.selective.grouping import ring_time
from host_stack.experiments.selective.simulator import (
    FairShareNetwork,
    SimConfig,
    draw_bandwidths,
    simulate,
)


def test_all_reduce_time_is_eq2_and_scale_is_n() -> None:
    cfg = SimConfig(scheme="allreduce", n=12, horizon=30, seed=3)
    res = simulate(cfg)
    bw = draw_bandwidths(cfg, random.Random(3))
    expected = ring_time(12, min(bw), cfg.v_bytes, cfg.alpha)
    assert res.sync_sizes and set(res.sync_sizes) == {12}
    assert res.sync_times == pytest.approx([expected] * len(res.sync_times))


@pytest.mark.parametrize("seed", range(3))
def test_partial_scale_is_p_and_selective_never_below_p(seed: int) -> None:
    part = simulate(SimConfig(scheme="partial", n=20, horizon=30, seed=seed))
    sel = simulate(SimConfig(scheme="selective", n=20, horizon=30, seed=seed))
    assert set(part.sync_sizes) == {6}
    assert sel.sync_sizes and min(sel.sync_sizes) >= 6
    # bandwidth-aware grouping must not make syncs slower on average
    assert sel.avg_sync_time < part.avg_sync_time


def test_fair_share_splits_a_shared_link() -> None:
    net = FairShareNetwork({"a": 10.0, "b": 4.0, "c": 100.0})
    net.add(1, frozenset({"a", "b"}), 8.0)
    net.add(2, frozenset({"a", "c"}), 8.0)
    rates = {r: state[1][1] for r, state in net.rings.items()}
    assert rates == pytest.approx({1: 4.0, 2: 6.0})  # ring 1 capped by b, ring 2 takes the rest
    assert net.next_finish() == pytest.approx((4.0 / 3.0, 2))
    net.advance(4.0 / 3.0)
    net.remove(2)
    assert net.rings[1][1][1] == pytest.approx(4.0)


def test_config_validation_names_the_field() -> None:
    with pytest.raises(ValueError, match="scheme"):
        SimConfig(scheme="ring")
    with pytest.raises(ValueError, match="p:"):
        SimConfig(n=4, p=5)


def test_experiment_quick_writes_table_csv_and_plot(tmp_path, capsys) -> None:
    assert main(["experiment", "selective", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "time x" in out and "paper" in out
    rows = list(csv.DictReader((tmp_path / "summary.csv").open()))
    assert [int(r["n"]) for r in rows] == [10, 20]
    assert all(float(r["partial_avg_sync_scale"]) == float(r["p"]) for r in rows)
    assert (tmp_path / "sync.png").stat().st_size > 10_000
