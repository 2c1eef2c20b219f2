"""`inart bench memory`: its figures from runs (the emulations themselves: tests/emulation)."""

from __future__ import annotations

import pytest

from emulation.bench import memory as bench_memory


def row(topology: str, fork: bool, peak: float, hosts: float, rss: float) -> dict:
    return {"topology": topology, "model": "cnn", "fork_server": fork, "workers": 50,
            "peak_pss_mb": peak, "host_pss_mb": hosts, "switch_pss_mb": peak - hosts,
            "peak_rss_mb": rss, "wall_s": 100.0}


def test_the_fork_server_is_judged_against_the_plain_start_and_the_goal():
    figs = {f["name"]: f for f in bench_memory.figures(
        row("fattree:6", True, 3000.0, 2000.0, 14000.0),
        row("fattree:6", False, 12000.0, 11000.0, 15000.0))}
    peak = figs["memory/fattree:6/cnn/fork_server/peak_pss"]
    assert peak["ratio"] == pytest.approx(0.25) and peak["met"] and peak["goal"] == "<= 4096 MB"
    assert figs["memory/fattree:6/cnn/fork_server/host_pss_per_worker"]["value"] == 40.0
    assert figs["memory/fattree:6/cnn/plain/peak_pss"]["ratio"] is None
    assert figs["memory/fattree:6/cnn/plain/peak_pss"]["goal"] is None
    lines = [bench_memory.line(f) for f in bench_memory.figures(
        row("fattree:6", True, 5000.0, 4000.0, 14000.0),
        row("fattree:6", False, 12000.0, 11000.0, 15000.0))]
    assert any("peak_pss" in x and "ratio 0.42" in x and "NOT met" in x for x in lines)


def test_a_plain_start_on_another_topology_has_no_ratio():
    figs = bench_memory.figures(row("fattree:6", True, 3000.0, 2000.0, 9000.0),
                                row("fattree:4", False, 5000.0, 4500.0, 6000.0))
    assert all(f["ratio"] is None for f in figs)
    assert {f["name"].split("/")[1] for f in figs} == {"fattree:4", "fattree:6"}
