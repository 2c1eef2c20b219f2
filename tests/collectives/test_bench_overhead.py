"""`inart bench message-overhead`: gloo ping-pong between two namespaces, half the median round
trip as the host's time per message (root)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from control_plane.repo import child_env
from host_stack.collectives.bench_overhead import figure
from host_stack.netns import can_create_veths


def test_the_figure_is_half_the_median_round_trip() -> None:
    times = [100e-6] * 5 + [90e-6] * 4 + [5e-3]  # one stall: in the mean, not the median
    fig = figure(times, 4)
    assert fig["name"] == "collectives.message_overhead" and fig["unit"] == "us"
    assert fig["value"] == pytest.approx(50.0)
    assert fig["mean_us"] > 250 and fig["round_trips"] == 10


@pytest.mark.skipif(can_create_veths() is not None, reason=str(can_create_veths()))
def test_the_bench_measures_a_ping_pong_between_namespaces(tmp_path) -> None:
    out = tmp_path / "mo.json"
    # no flock here: the suite's caller holds the machine's network lock (waiting for it from
    # inside a run that holds it would wait for ever)
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "bench",
                           "message-overhead", "--round-trips", "50", "--warmup", "5",
                           "--json", str(out)],
                          capture_output=True, text=True, timeout=300, env=child_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "collectives.message_overhead" in proc.stdout
    doc = json.loads(out.read_text())
    assert len(doc["round_trips_s"]) == 50
    # a real round trip through the kernel: above 1 us, and far below a second
    assert 1 < doc["figure"]["value"] < 1e5
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not re.search(r"^mo\d+[ab]\b", listed, re.M)  # the namespaces are gone


def test_bad_counts_are_refused_naming_the_flag() -> None:
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "bench",
                           "message-overhead", "--round-trips", "0"], capture_output=True,
                          text=True, timeout=120, env=child_env())
    assert proc.returncode != 0 and "--round-trips: expected >= 1" in proc.stderr
