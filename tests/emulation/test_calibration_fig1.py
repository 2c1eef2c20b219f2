"""The fig1 calibration, small: `inart bench calibrate` emulates five schemes for a few rounds
and simulates the same configuration.  Bytes per link agree within 10% for every scheme.
Communication time (the emulation's exchange, from the last worker's start to the last end):
ATP and LBMM within 10% (0.99-1.00 measured); the tree within 15% (simulated rank by rank:
0.90 and 0.98 measured; in lockstep it was 1.10 and 1.21); RSGCM within 15% (its gloo ring
all-reduces message by message, gloo's notices counted: 0.925-0.965 measured, 0.88-0.90
before the notices); the ring within 30%: its steps run at the model's link time, but on the shared
2-core machine one stalled transfer or wakeup delays every later step of the ring (0.76-0.88
measured at load 6-30; before the ring posted its receives ahead, 0.41-0.55).  The schemes are
ordered alike, but for the ring and RSGCM: the model has the ring 7% faster, the emulation had
the two within 7% of each other either way, and the ring slower by more when it stalls
(docs/simulation-calibration.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.repo import child_env

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet_and_program")]

SCHEMES = ("atp", "lbmm", "ring", "tree", "rsgcm")
# comm time (module docstring)
WITHIN = {"lbmm": 0.10, "atp": 0.10, "tree": 0.15, "rsgcm": 0.15, "ring": 0.30}
# the one pair the ring's stalls may swap (module docstring)
RING_STALL = "rsgcm<ring"


@pytest.fixture(scope="module")
def calibration(tmp_path_factory) -> dict:
    out: Path = tmp_path_factory.mktemp("calibrate")
    proc = subprocess.run(
        [sys.executable, "-m", "control_plane.cli", "bench", "calibrate", "-t", "fig1",
         "--rounds", "8", "--eval-every", "8", "--scheme", ",".join(SCHEMES),
         "--scale", "0.5", "--out", str(out), "--json", str(out / "calibrate.json")],
        capture_output=True, text=True, timeout=900, env=child_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "calibrate.order[fig1]" in proc.stdout
    # the collectives' host time per message, measured on this machine after the emulation
    assert "us per message (measured now on this machine)" in proc.stdout
    return json.loads((out / "calibrate.json").read_text())


def by_scheme(result: dict) -> dict[str, dict]:
    return {s["scheme"]: s for s in result["schemes"]}


def test_bytes_per_link_within_10_percent_for_every_scheme(calibration) -> None:
    schemes = by_scheme(calibration)
    assert sorted(schemes) == sorted(SCHEMES)
    for name, s in schemes.items():
        assert s["links"] >= 14, name  # every worker link both ways, and v1-v2
        assert s["link_err_max"] <= 0.10, (name, s["worst_link"], s["per_link"])


def test_comm_time_within_bounds_where_the_flow_model_holds(calibration) -> None:
    schemes = by_scheme(calibration)
    for name, bound in WITHIN.items():
        assert abs(schemes[name]["comm_ratio"] - 1) <= bound, (name, schemes[name])


def test_the_measured_host_overhead_is_a_kernel_round_trip(calibration) -> None:
    assert 1 < calibration["setup"]["host_overhead_us"] < 10_000


def test_ordering_agrees(calibration) -> None:
    swapped = [pair for pair in calibration["swapped"] if pair != RING_STALL]
    assert swapped == [], (calibration["emu_order"], calibration["sim_order"])
