"""The fig1 calibration, small: `inart bench calibrate` emulates four schemes for a few rounds
and simulates the same configuration.  Bytes per link agree within 10% for every scheme.
Communication time: LBMM within 10%; the tree within 15% (the flow model runs its stages in
lockstep across trees, which the emulation does not: 0.92-1.11 measured); ATP within 25%,
because on the shared 2-core machine its Python hosts and switches fall behind its plan by
5-25% depending on the load (docs/simulation-calibration.md), which the plan-paced model
cannot follow.  The schemes are ordered alike.  The host stack's ring is the known exception:
the emulation takes about twice the flow model's time for it, although TCP alone reaches the
link rate there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.repo import child_env

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet_and_program")]

SCHEMES = ("atp", "lbmm", "ring", "tree")
WITHIN = {"lbmm": 0.10, "tree": 0.15, "atp": 0.25}  # comm time (see the module docstring)


@pytest.fixture(scope="module")
def calibration(tmp_path_factory) -> dict:
    out: Path = tmp_path_factory.mktemp("calibrate")
    proc = subprocess.run(
        [sys.executable, "-m", "control_plane.cli", "bench", "calibrate", "-t", "fig1",
         "--rounds", "8", "--eval-every", "8", "--schemes", ",".join(SCHEMES),
         "--scale", "0.5", "--out", str(out), "--json", str(out / "calibrate.json")],
        capture_output=True, text=True, timeout=900, env=child_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "calibrate.order[fig1]" in proc.stdout
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


def test_ordering_agrees_but_for_the_ring(calibration) -> None:
    swapped = [s for s in calibration["swapped"] if "ring" not in s.split("<")]
    assert swapped == [], calibration["swapped"]


@pytest.mark.xfail(strict=True, reason="each dependent step of the host stack's ring over gloo "
                   "takes about twice its link time in the emulation "
                   "(docs/simulation-calibration.md)")
def test_ring_comm_time_within_10_percent(calibration) -> None:
    ring = by_scheme(calibration)["ring"]
    assert abs(ring["comm_ratio"] - 1) <= 0.10, ring
