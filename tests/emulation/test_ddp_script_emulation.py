"""An unchanged DDP script under `inart emulate --mode train --script`: its all-reduces go
through the fig1 network's embedded P4 switches, whose counters show them aggregated."""

import json
import subprocess
import sys

import pytest

from control_plane.repo import REPO, child_env

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet_and_program")]


def test_a_ddp_script_is_aggregated_in_the_network(tmp_path):
    out = tmp_path / "emulate"
    run = subprocess.run(
        [sys.executable, "-m", "control_plane.cli", "emulate", "-t", "fig1", "-s", "inart",
         "--mode", "train", "--quiet", "--out", str(out), "--deadline", "600", "--script",
         str(REPO / "examples/ddp_gpt.py"), "--", "--backend", "inart", "--steps", "2",
         "--width", "32", "--layers", "1", "--context", "8", "--vocab", "8"],
        capture_output=True, text=True, env=child_env(), timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    (row,) = json.loads((out / "emulate.json").read_text())
    aggregated = {sw: ev.get("aggregated_out", 0) for sw, ev in row["switch_events"].items()}
    assert sum(aggregated.values()) > 0, row["switch_events"]
    assert sum(s.get("rx_aggregated", 0) for s in row["ps"].values()) > 0
    done = [json.loads(s) for s in row["rank0_lines"] if '"done"' in s]
    assert done and done[0]["backend"] == "inart"
    assert "switches sent" in run.stdout


def test_script_errors_come_before_the_network(tmp_path):
    run = subprocess.run([sys.executable, "-m", "control_plane.cli", "emulate", "-t", "fig1",
                          "--script", str(REPO / "examples/ddp_gpt.py")],
                         capture_output=True, text=True, env=child_env(), timeout=60)
    assert run.returncode == 2 and "--script: only with --mode train" in run.stderr
    run = subprocess.run([sys.executable, "-m", "control_plane.cli", "emulate", "-t", "fig1",
                          "--mode", "train", "--script", str(tmp_path / "nope.py")],
                         capture_output=True, text=True, env=child_env(), timeout=60)
    assert run.returncode == 2 and "no such file" in run.stderr
