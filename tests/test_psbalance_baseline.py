"""PS balancing: stock MXNet's key-to-server baseline, the cost model's predictions, the table."""

from __future__ import annotations

import argparse

import pytest

from control_plane.cli.main import main
from host_stack.experiments.psbalance.cluster import RunConfig, capability_distortion
from host_stack.experiments.psbalance.experiment import (
    SCHEMES,
    apply_presets,
    configure,
    format_table,
    summarise,
)
from host_stack.experiments.psbalance.loads import iteration_time, node_times, plan_shares
from host_stack.experiments.psbalance.mxnet_default import (
    TENSORS,
    mxnet_shares,
    server_fractions,
)
from host_stack.experiments.psbalance.predict import predicted_speedups

MODELS = ["mobilenet", "resnet50", "alexnet"]


@pytest.mark.parametrize(("name", "params"), [("mobilenet", 4_231_976),
                                              ("resnet50", 25_557_032),
                                              ("alexnet", 62_378_344)])
def test_architectures_have_their_published_parameter_counts(name: str, params: int) -> None:
    assert sum(TENSORS[name]()) == params


def test_small_tensors_go_whole_to_key_times_9973_and_big_ones_are_split() -> None:
    # keys 0, 1, 2: 9973 % 4 == 1, so small tensors land on servers 0 and 1; the big one splits
    fractions = server_fractions([100, 300, 2_000_000, 600], 4)
    total = 2_001_000
    assert fractions == pytest.approx([(100 + 500_000) / total, (300 + 500_000) / total,
                                       500_000 / total, (500_000 + 600) / total])
    assert server_fractions([10], 1) == [1.0]
    with pytest.raises(ValueError, match="servers"):
        server_fractions([10], 0)
    with pytest.raises(ValueError, match="tensors"):
        server_fractions([], 3)


def test_mxnet_loads_are_skewed_most_on_the_small_tensor_model() -> None:
    worst = {m: max(server_fractions(TENSORS[m](), 12)) * 12 for m in MODELS}
    assert worst["mobilenet"] > 3.5 > worst["resnet50"] > 1.5 > worst["alexnet"] > 1.0
    shares = mxnet_shares("resnet50", {str(i): 1.0 for i in range(12)}, 93.0)
    assert sum(shares.values()) == pytest.approx(93.0)
    with pytest.raises(ValueError, match="model_name"):
        mxnet_shares("vgg", {"a": 1.0, "b": 1.0, "c": 1.0}, 1.0)
    with pytest.raises(ValueError, match="model_name"):
        plan_shares("average-mxnet", {"a": 1.0, "b": 1.0, "c": 1.0}, 1.0, 0.1)


def test_iteration_time_is_the_slowest_node() -> None:
    rates = {"a": 1.0, "b": 2.0, "c": 4.0}
    shares = {"a": 0.0, "b": 0.5, "c": 0.5}
    assert iteration_time(shares, rates, 1.0) == max(node_times(shares, rates, 1.0).values())
    assert iteration_time(shares, rates, 1.0) == pytest.approx(1.0)  # a sends M at rate 1


def test_equal_split_speedup_is_bounded_by_2_n_minus_1_over_n() -> None:
    """Any scheme still sends M - m_i >= 0 from the slowest node, so over an equal split
    (which costs (2N - 2) M / (N S_min) there) no share assignment gains more than 2(N-1)/N."""
    for nodes in (4, 12):
        bound = 2 * (nodes - 1) / nodes
        for frac in (1.0, 0.5, 0.01):
            pred = predicted_speedups(nodes, frac, "average", ["mobilenet"], draws=30)
            assert 1.0 - 1e-9 <= pred["mobilenet"]["aware"] <= bound + 1e-9
        skewed = predicted_speedups(nodes, 0.01, "average", ["mobilenet"], draws=30)
        assert skewed["mobilenet"]["aware"] == pytest.approx(bound, rel=0.02)
    with pytest.raises(ValueError, match="draws"):
        predicted_speedups(4, 0.5, "average", ["mobilenet"], draws=0)


def test_mxnet_baseline_orders_the_speedups_like_the_paper() -> None:
    pred = predicted_speedups(12, 0.5, "average-mxnet", MODELS, draws=30)
    aware = [pred[m]["aware"] for m in MODELS]
    assert aware[0] > aware[1] > aware[2] > 1.2
    assert aware[0] > 2 * (12 - 1) / 12  # beyond what any equal-split baseline allows


def test_summary_and_table_put_ours_model_and_paper_side_by_side() -> None:
    records = [{"model": "alexnet", "scheme": s, "seconds": t, "t_model_s": t / 2,
                "t_star_s": 0.5, "model_bytes": 1000, "iter": i,
                "cap_distortion": 1.5}
               for s, t in zip(SCHEMES, (2.0, 1.6, 1.0), strict=True) for i in range(3)]
    [row] = summarise(records, ["alexnet"])
    assert row["aware_speedup"] == pytest.approx(2.0)
    assert row["aware_model_speedup"] == pytest.approx(2.0)
    assert row["aware_vs_paper"] == pytest.approx(2.0 / 1.32)
    assert row["aware_cap_distortion"] == 1.5
    text = format_table([row])
    assert "alexnet" in text and "1.32" in text and "1.52" in text


def test_predict_runs_without_root(capsys) -> None:
    assert main(["experiment", "ps-balance", "--predict", "--nodes", "4",
                 "--model", "mobilenet"]) == 0
    out = capsys.readouterr().out
    assert "mxnet" in out and "2.68" in out and "mobilenet" in out


def test_capability_distortion_ignores_a_common_factor() -> None:
    true = {"a": 1.0, "b": 2.0, "c": 4.0}
    assert capability_distortion({"a": 3.0, "b": 6.0, "c": 12.0}, true) == pytest.approx(1.0)
    assert capability_distortion({"a": 2.0, "b": 2.0, "c": 4.0}, true) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="capabilities"):
        RunConfig(capabilities="guess")
    assert RunConfig(capabilities="probe+data").capabilities == "probe+data"


def test_paper_setting_takes_12_nodes(capsys) -> None:
    assert main(["experiment", "ps-balance", "--paper-setting", "--predict",
                 "--model", "alexnet"]) == 0
    assert "12 nodes" in capsys.readouterr().out


def test_paper_setting_slices_unless_given() -> None:
    parser = argparse.ArgumentParser()
    configure(parser)
    for argv, nodes, slice_kb in (([], 6, 64), (["--paper-setting"], 12, 8),
                                  (["--paper-setting", "--slice-kb", "64"], 12, 64)):
        args = parser.parse_args(argv)
        apply_presets(args)
        assert (args.nodes, args.slice_kb, args.baseline) == (
            nodes, slice_kb, "mxnet" if nodes == 12 else "equal")
