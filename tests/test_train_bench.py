"""`inart bench train --impair`: its figures from runs (no training here; the bench itself
runs `inart train`, which tests/test_ina_training.py covers)."""

import argparse
import json

import pytest

from host_stack.train import bench


def runs(base_s, factor, reps=3, values=100_000):
    out = []
    for k in range(reps):
        out.append({"repeat": k, "impair": "", "round_s": base_s[k], "retx_per_round": 0,
                    "spurious_per_round": 0, "packets_per_round": 1000, "values": values})
        for _, impair, _ in bench.IMPAIRMENTS:
            out.append({"repeat": k, "impair": impair, "round_s": base_s[k] * factor[impair],
                        "retx_per_round": 20, "spurious_per_round": 5,
                        "packets_per_round": 1000, "values": values})
    return out


def test_each_impairment_is_judged_against_the_unimpaired_round_of_its_repetition():
    factor = {i: g for _, i, g in bench.IMPAIRMENTS} | {"loss=0.01": 3.0}  # one misses
    figs = {f["name"]: f for f in bench.impair_figures(runs([0.02, 0.05, 0.03], factor))}
    ok = figs["train/impair/100000/loss_0.1%/round_time"]
    assert ok["ratio"] == pytest.approx(1.5) and ok["met"] and ok["goal"] == "<= 1.5"
    assert ok["ratios"] == [1.5, 1.5, 1.5]  # the load changed between repetitions, not ratios
    assert not figs["train/impair/100000/loss_1%/round_time"]["met"]
    # reordering alone loses nothing: every retransmission is spurious, 20 of 1000 packets
    spur = figs["train/impair/100000/reorder_5%/spurious"]
    assert spur["value"] == pytest.approx(2.0) and spur["goal"] == "< 1.0" and not spur["met"]
    assert figs["train/impair/100000/loss_1%/spurious"]["value"] == pytest.approx(0.5)
    assert "goal" not in figs["train/impair/100000/loss_1%/spurious"] or \
        figs["train/impair/100000/loss_1%/spurious"]["goal"] is None
    for f in figs.values():
        assert bench.line(f).startswith(f["name"])
    assert bench.line(ok).endswith("goal <= 1.5: met (repetitions 1.50-1.50)")


def test_a_repetition_is_judged_against_the_mean_of_its_unimpaired_runs():
    """Unimpaired runs open and close each repetition: a machine that slowed down in
    between (20 ms first, 30 ms last) gives the impaired runs a 25 ms baseline."""
    factor = {i: 1.0 for _, i, _ in bench.IMPAIRMENTS}
    out = runs([0.025] * 2, factor, reps=2)
    for r in out:
        if not r["impair"]:
            r["round_s"] = 0.02
    out += [r | {"round_s": 0.03} for r in out if not r["impair"]]
    figs = {f["name"]: f for f in bench.impair_figures(out)}
    assert figs["train/impair/100000/reorder_5%/round_time"]["ratios"] == [1.0, 1.0]
    assert figs["train/impair/100000/none/round_time"]["value"] == pytest.approx(0.025)
    floor = figs["train/impair/100000/reorder_5%/delay_floor"]
    assert floor["ratio"] == pytest.approx(1.16)  # 4 ms over 25


def test_each_impaired_run_is_judged_against_its_unimpaired_neighbours():
    """The bench runs unimpaired, impaired, unimpaired, ...: on a machine that slows down
    run after run (20, 21, 22 ... ms) every impaired run that is as fast as its neighbours
    shows 1.0, where the repetition's first and last unimpaired runs would not."""
    out = [{"repeat": 0, "impair": impair, "round_s": 0.020 + 0.001 * j,
            "retx_per_round": 0, "spurious_per_round": 0, "packets_per_round": 1000,
            "values": 100_000} for j, impair in enumerate(bench.IMPAIR_ORDER)]
    figs = {f["name"]: f for f in bench.impair_figures(out)}
    for name, _, _ in bench.IMPAIRMENTS:
        assert figs[f"train/impair/100000/{name}/round_time"]["ratios"] == [1.0]
    floor = figs["train/impair/100000/reorder_5%/delay_floor"]  # its neighbours: 24, 26 ms
    assert floor["ratio"] == pytest.approx(29 / 25)
    with pytest.raises(ValueError, match="repetition 0: no unimpaired run to compare"):
        bench.impair_figures([r for r in out if r["impair"]])


def fake_runs(monkeypatch) -> tuple[list[tuple], argparse.ArgumentParser]:
    """bench.one_run replaced by one that records (mode, values, rounds, impair) and returns
    a 20 ms round; and the bench's parser."""
    calls: list[tuple] = []

    def one_run(plan, mode, values, rounds, impair=""):
        calls.append((mode, values, rounds, impair))
        return {"mode": mode, "values": values, "rounds": rounds - 1, "impair": impair,
                "round_s": 0.02, "retx_per_round": 0, "spurious_per_round": 0,
                "packets_per_round": 1000}

    monkeypatch.setattr(bench, "one_run", one_run)
    parser = argparse.ArgumentParser()
    bench.configure(parser)
    return calls, parser


def test_the_bench_runs_each_impairment_between_two_unimpaired_runs(monkeypatch, tmp_path,
                                                                     capsys):
    calls, parser = fake_runs(monkeypatch)
    out = tmp_path / "b.json"
    args = ["--impair", "--repeat", "2", "--sizes", "7", "--plan", "p.json", "--json", str(out)]
    assert bench.run(parser.parse_args(args)) == 0
    one = ["", "loss=0.001", "", "loss=0.01", "", "reorder=0.05", "",
           "loss=0.05,dup=0.05,reorder=0.05", ""]
    assert [(values, impair) for _, values, _, impair in calls] == [(7, i) for i in one + one]
    assert "each impaired run between two unimpaired ones" in capsys.readouterr().out
    assert len(json.loads(out.read_text())["runs"]) == 2 * len(one)


def test_impair_defaults_to_a_median_of_five_twenty_round_repetitions(monkeypatch):
    """A verdict from one 5-round repetition moves by more than the goals' margins; plain
    `inart bench train` keeps its 5 rounds, one run per mode."""
    calls, parser = fake_runs(monkeypatch)
    assert bench.run(parser.parse_args(["--impair", "--sizes", "7", "--plan", "p"])) == 0
    assert len(calls) == 5 * len(bench.IMPAIR_ORDER)
    assert {rounds for _, _, rounds, _ in calls} == {20}
    calls.clear()
    assert bench.run(parser.parse_args(["--sizes", "7", "--plan", "p"])) == 0
    assert sorted(calls) == sorted((mode, 7, 5, "") for mode in bench.MODES)


def test_bad_options_are_refused(capsys):
    parser = argparse.ArgumentParser()
    bench.configure(parser)
    assert bench.run(parser.parse_args(["--impair", "--repeat", "0"])) == 2
    assert bench.run(parser.parse_args(["--impair", "--sizes", "0"])) == 2
    assert "--repeat >= 1" in capsys.readouterr().err


def test_reordering_shows_the_floor_its_own_delay_sets():
    """Held packets arrive ``delay`` late whatever the transport does: with the default 2 ms
    on the last GRAD and the last RESULT, a 20 ms round cannot end before 24 ms (1.2x)."""
    factor = {i: g for _, i, g in bench.IMPAIRMENTS}
    figs = {f["name"]: f for f in bench.impair_figures(runs([0.02, 0.02, 0.04], factor))}
    floor = figs["train/impair/100000/reorder_5%/delay_floor"]
    assert floor["value"] == pytest.approx(0.004) and floor["goal"] is None
    assert floor["ratio"] == pytest.approx(1.2)  # median of 1.2, 1.2, 1.1
    assert "train/impair/100000/loss_1%/delay_floor" not in figs  # no reordering: no floor


def test_each_size_is_judged_on_its_own_rounds():
    """The hold-back's floor shrinks as rounds grow: a size's ratios and floor come from its
    own unimpaired rounds, never from another size's."""
    small = {i: g for _, i, g in bench.IMPAIRMENTS} | {"reorder=0.05": 1.3}
    large = {i: 1.05 for _, i, _ in bench.IMPAIRMENTS}
    figs = {f["name"]: f for f in bench.impair_figures(
        runs([0.02] * 3, small) + runs([0.2] * 3, large, values=1_000_000))}
    assert not figs["train/impair/100000/reorder_5%/round_time"]["met"]
    big = figs["train/impair/1000000/reorder_5%/round_time"]
    assert big["ratio"] == pytest.approx(1.05) and big["met"]
    assert figs["train/impair/1000000/reorder_5%/delay_floor"]["ratio"] == pytest.approx(1.02)
    assert figs["train/impair/100000/reorder_5%/delay_floor"]["ratio"] == pytest.approx(1.2)
