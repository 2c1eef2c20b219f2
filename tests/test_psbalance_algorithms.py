"""PS load balancing: Alg. 1 vs the closed form, baselines, Alg. 2, probes, partition seam."""

from __future__ import annotations

import random

import pytest

from host_stack.experiments.psbalance.loads import (
    average,
    closed_form,
    elastic,
    load_distribution,
    node_times,
)
from host_stack.experiments.psbalance.partition import partition_from_throughputs
from host_stack.experiments.psbalance.probe import ThroughputTable, probe_rate
from host_stack.experiments.psbalance.slices import assign_slices, bytes_per_ps


def _rates(n: int, seed: int, low: float = 5.0) -> dict[str, float]:
    rng = random.Random(seed)
    return {f"n{i}": rng.uniform(low, 220.0) for i in range(n)}  # Mbit/s, like the paper


def test_closed_form_equal_times_when_everyone_shares() -> None:
    s = {"a": 10.0, "b": 10.0, "c": 10.0, "d": 10.0}
    shares, t = closed_form(s, 100.0)
    assert t == pytest.approx(2 * 3 * 100 / 40)  # T* = 2 (N-1) M / sum S
    assert shares == pytest.approx(dict.fromkeys(s, 25.0))


def test_closed_form_drops_negative_shares() -> None:
    s = {"slow": 1.0, "a": 50.0, "b": 50.0, "c": 50.0}
    shares, t = closed_form(s, 100.0)
    assert shares["slow"] == 0.0
    assert sum(shares.values()) == pytest.approx(100.0)
    assert all(v >= 0 for v in shares.values())
    times = node_times(shares, s, 100.0)
    assert all(times[i] == pytest.approx(t) for i in "abc")


@pytest.mark.parametrize("seed", range(20))
def test_algorithm1_matches_closed_form_within_threshold(seed: int) -> None:
    s = _rates(12, seed)
    model, threshold = 8 * 93.0, 1.0  # ResNet50's 93 MB in Mbit, times in s, paper's 1 s
    shares = load_distribution(s, model, threshold)
    ref, t_star = closed_form(s, model)
    assert sum(shares.values()) == pytest.approx(model)
    assert min(shares.values()) >= 0
    times = node_times(shares, s, model)
    sharing = [i for i in s if shares[i] > 0]
    assert max(times[i] for i in sharing) - min(times.values()) <= threshold
    assert max(times[i] for i in sharing) == pytest.approx(t_star, abs=threshold)
    zero_ref = {i for i in s if ref[i] == 0}
    zero_alg = {i for i in s if shares[i] == 0}
    assert zero_ref <= zero_alg
    # Alg. 1 may also empty a node whose exact share is worth less than the threshold
    assert all(10 * ref[i] / s[i] <= threshold for i in zero_alg - zero_ref)
    if all(v > 0 for v in ref.values()):
        assert t_star == pytest.approx(2 * 11 * model / sum(s.values()))


def test_algorithm1_beats_baselines_on_heterogeneous_rates() -> None:
    s = _rates(12, 7)
    model = 8 * 21.0
    worst = {name: max(node_times(f(s, model), s, model).values())
             for name, f in (("avg", average), ("elastic", elastic),
                             ("aware", lambda s, m: load_distribution(s, m, 0.01)))}
    assert worst["aware"] <= worst["elastic"] <= worst["avg"]
    assert worst["aware"] < 0.8 * worst["avg"]


def test_input_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match="throughputs"):
        closed_form({"a": 1.0, "b": 1.0}, 1.0)
    with pytest.raises(ValueError, match="throughputs"):
        load_distribution({"a": 1.0, "b": 0.0, "c": 1.0}, 1.0, 0.1)
    with pytest.raises(ValueError, match="threshold"):
        load_distribution({"a": 1.0, "b": 1.0, "c": 1.0}, 1.0, 0.0)


def test_slice_assignment_follows_shares_and_probes_every_node() -> None:
    shares = {"a": 600.0, "b": 300.0, "c": 100.0, "d": 0.0}
    slices = assign_slices(shares, 1000, 10, probe_bytes=5, num_probe=2)
    assert sum(s.length for s in slices) == 1000
    assert [s.offset for s in slices] == sorted(s.offset for s in slices)
    assert {s.ps for s in slices if s.probe} == set(shares)  # idle d is still probed
    got = bytes_per_ps(slices)
    for ps, want in shares.items():
        assert abs(got[ps] - max(want, 10)) <= 10 + 5  # within one slice (probes included)


def test_probe_rate_and_capabilities() -> None:
    assert probe_rate(1000, 2.0, 2.5) == 2000.0
    with pytest.raises(ValueError, match="probe_arrival"):
        probe_rate(1000, 2.0, 2.0)
    table = ThroughputTable(["a", "b", "c"], window=2)
    for rate in (10.0, 30.0, 20.0):  # window 2: mean of the last two = 25
        table.record("a", "b", rate)
    table.record("c", "b", 5.0)
    caps = table.update_capabilities()
    assert caps["b"] == pytest.approx(30.0)
    assert caps["a"] == pytest.approx(25.0)


def test_partition_from_throughputs_sums_to_one() -> None:
    s = {"ps1": 100.0, "ps2": 70.0, "ps3": 30.0, "ps4": 100.0}
    for scheme in ("aware", "average", "elastic"):
        x = partition_from_throughputs(s, scheme)
        assert sum(x.values()) == pytest.approx(1.0)
        assert set(x) == set(s)
    x = partition_from_throughputs(s)
    assert x["ps1"] > x["ps2"] > x["ps3"]
    with pytest.raises(ValueError, match="scheme"):
        partition_from_throughputs(s, "bogus")
