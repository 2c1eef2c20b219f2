"""`inart bench pacing`'s figures: one labelled line per run, kernel beside user."""

from __future__ import annotations

import argparse
import json

from emulation.bench_pacing import configure, figures, line


def _row(load: str, pacing: str, ratio: float) -> dict:
    return {"topology": "fig1", "scale": 0.25, "load": load, "pacing": pacing,
            "rate_ratio": ratio, "rate_mbps": 0.6, "plan_rate_mbps": 0.625, "retx": 0,
            "exact": True, "cpu_busy": 1.0, "cpu_saturated_share": 1.0,
            "run_queue_per_cpu": 5.0, "fidelity": "bounded by the machine",
            "kernel_paced_share": 1.0 if pacing == "kernel" else None}


def test_each_run_is_a_line_and_kernel_runs_carry_their_ratio_to_user():
    figs = figures([_row("idle", "user", 0.8), _row("idle", "kernel", 0.96),
                    _row("loaded", "user", 0.5), _row("loaded", "kernel", 0.95)])
    by = {f["name"]: f for f in figs}
    assert by["pacing/fig1/loaded/kernel"]["ratio"] == 0.95 / 0.5
    assert by["pacing/fig1/loaded/user"]["ratio"] is None
    assert not by["pacing/fig1/idle/user"]["met"] and by["pacing/fig1/idle/kernel"]["met"]
    text = line(by["pacing/fig1/loaded/kernel"])
    assert text.startswith("pacing/fig1/loaded/kernel") and "kernel/user 1.90" in text
    assert "goal >= 0.9: met" in text and "tc_share 1.0" in text
    json.dumps(figs)  # --json


def test_bad_scales_are_refused_naming_the_option(capsys):
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(["--topologies", "fig1,fattree:6", "--scales", "0.25,0.01,0.5"])
    assert args.func(args) == 2
    assert "--scales" in capsys.readouterr().err
