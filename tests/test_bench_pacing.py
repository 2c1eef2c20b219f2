"""`inart bench pacing`'s figures: one labelled line per run, each beside the user-paced run
without isolation under the same load."""

from __future__ import annotations

import argparse
import json

import pytest

from emulation.bench.pacing import configure, figures, line


def _row(load: str, pacing: str, ratio: float, isolation: str = "none") -> dict:
    return {"topology": "fig1", "scale": 0.25, "load": load, "pacing": pacing,
            "isolation": isolation, "rate_ratio": ratio, "rate_mbps": 0.6,
            "plan_rate_mbps": 0.625, "retx": 0, "exact": True, "cpu_busy": 1.0,
            "cpu_saturated_share": 1.0, "run_queue_per_cpu": 5.0, "switch_cores": 0.1,
            "host_cores": 0.9, "fidelity": "bounded by the machine",
            "kernel_paced_share": 1.0 if pacing == "kernel" else None}


def test_each_run_is_a_line_with_its_ratio_to_user_pacing_without_isolation():
    figs = figures([_row("idle", "user", 0.8), _row("idle", "kernel", 0.96),
                    _row("train", "user", 0.5), _row("train", "kernel", 0.75),
                    _row("train", "user", 0.6, "800"), _row("train", "kernel", 0.95, "800")])
    by = {f["name"]: f for f in figs}
    assert by["pacing/fig1/train/kernel"]["ratio"] == 0.75 / 0.5
    assert by["pacing/fig1/train/user/w800"]["ratio"] == 0.6 / 0.5
    assert by["pacing/fig1/train/kernel/w800"]["ratio"] == 0.95 / 0.5
    assert by["pacing/fig1/train/user"]["ratio"] is None
    assert by["pacing/fig1/idle/kernel"]["ratio"] == 0.96 / 0.8
    assert not by["pacing/fig1/idle/user"]["met"] and by["pacing/fig1/idle/kernel"]["met"]
    text = line(by["pacing/fig1/train/kernel/w800"])
    assert text.startswith("pacing/fig1/train/kernel/w800") and "vs user 1.90" in text
    assert "goal >= 0.9: met" in text and "tc_share 1.0" in text
    assert "switch_cores 0.1" in text
    json.dumps(figs)  # --json


@pytest.mark.parametrize("argv, option", [
    (["--topology", "fig1,fattree:6", "--scales", "0.25,0.01,0.5"], "--scales"),
    (["--loads", "idle,busy"], "--loads 'busy'"),
    (["--isolations", "none,0"], "--isolations '0'"),
    (["--isolations", ","], "--isolations"),
])
def test_bad_options_are_refused_naming_the_option(capsys, argv, option):
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(argv)
    assert args.func(args) == 2
    assert option in capsys.readouterr().err
