"""The scale sweep's rules and the resource monitor (no Mininet: rows are given)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from emulation.measure.resources import Monitor, cpu_s, descendants, memory_kb, pss_kb
from emulation.runs.scale_search import ScaleResult, limit, parse_scales, search, summary


def row(scheme="inart", ratio=1.0, exact=True, busy=0.5, sw=0.6, hosts=0.3, drops=None):
    return {"scheme": scheme, "plan_ratio": ratio, "exact": exact, "machine_busy": busy,
            "switch_cores": sw, "host_cores": hosts, "cpus": 2,
            "target_drops": drops or {}}


def test_parse_scales_refuses_bad_input_by_name():
    assert parse_scales("0.01,0.02,0.05") == [0.01, 0.02, 0.05]
    for bad in ("", "0.02,0.01", "0,0.1", "x"):
        with pytest.raises(ValueError, match="--find-max-scale"):
            parse_scales(bad)


def test_search_stops_after_the_first_scale_that_fails_and_names_the_limit():
    def run_at(scale):
        ratio = 1.0 if scale < 0.05 else 0.8
        return ScaleResult(scale, [row(ratio=ratio, busy=0.97, sw=1.5, hosts=0.4),
                                   row("atp")], 900.0, 60.0)

    results = search([0.01, 0.02, 0.05, 0.1], run_at)
    assert [r.scale for r in results] == [0.01, 0.02, 0.05]
    lines = summary(results)
    assert lines[0].startswith("largest scale reached: 0.02 Mbit/s per unit")
    assert "inart sent at 0.80 of its plan" in lines[1]
    assert "saturated, mostly by the switches" in lines[1]


def test_limit_names_memory_lost_frames_wrong_sums_and_failed_runs():
    over = ScaleResult(0.1, [row(ratio=0.5, exact=False,
                                 drops={"s1": {"rx_ring_full": 7, "ingress_drop": 9}})],
                       5000.0, 10.0)
    text = limit(over)
    assert "WRONG SUMS" in text and "memory: peak PSS 5000 MB > 4096 MB" in text
    assert "lost 7 frames" in text  # the program's own drops are not lost frames
    failed = ScaleResult(0.2, [], float("nan"), float("nan"), error="deadline passed\nmore")
    assert not failed.holds and limit(failed) == "the run failed: deadline passed"


def test_monitor_measures_pss_and_cpu_of_a_process_tree():
    """A child below a shell burns some CPU, says how much, and lingers a second, so the
    monitor's last sample sees all of it."""
    burn = ("import time\nsum(range(10**7))\nprint(time.process_time(), flush=True)\n"
            "time.sleep(1)")
    parent = subprocess.Popen(["sh", "-c", f"{sys.executable} -c '{burn}'; sleep 0"],
                              stdout=subprocess.PIPE, text=True)
    try:
        with Monitor(lambda: {"hosts": [parent.pid], "me": [os.getpid()]}, 0.2) as mon:
            mon.mark()
            time.sleep(0.3)
            assert len(descendants([parent.pid])) == 2
            assert descendants([parent.pid, *descendants([parent.pid])]) == \
                descendants([parent.pid])  # a root below another root counts once
            used = float(parent.stdout.readline())
            time.sleep(0.5)
            usage = mon.usage()
            parent.wait(timeout=10)
    finally:
        parent.kill()
    assert usage.peak_split_mb["me"] > 5 and usage.peak_split_mb["hosts"] > 1
    # RSS counts shared pages in full in every process: never below PSS
    assert usage.peak_rss_mb >= usage.peak_pss_mb > 0 and mon.all_peak_rss_mb >= usage.peak_rss_mb
    # CPU the interval saw = what the child used (less its start-up before the mark)
    assert used - 0.3 <= usage.cores["hosts"] * usage.wall_s <= used + 0.05, (used, usage)
    assert pss_kb(parent.pid) == 0 and cpu_s(parent.pid) is None  # gone
    assert memory_kb(parent.pid) == (0, 0)
    pss, rss = memory_kb(os.getpid())
    assert 0 < pss <= rss
