"""`inart bench controller` end to end on a small plan: one labelled line per figure, a target
that cannot run is reported and skipped, and the JSON holds what the lines say."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from control_plane.repo import child_env


def test_bench_controller_small(tmp_path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "control_plane.cli", "bench", "controller", "--topology",
         "leafspine:2,1,3", "--ps", "1", "--switches", "2", "--targets", "embedded,bmv2",
         "--parts", "install", "--json", str(out)],
        capture_output=True, text=True, timeout=300,
        env=child_env(INART_BMV2=os.devnull + "-missing"))  # bmv2 "not installed" here
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("controller/")]
    assert [line.split(":")[0] for line in lines] == [
        "controller/embedded/install-writes", "controller/embedded/p4runtime-shell-writes",
        "controller/embedded/install-per-switch",
        "controller/embedded/p4runtime-shell-per-switch", "controller/bmv2"]
    assert "entries/s, ratio" in lines[0] and "goal >= 5x:" in lines[0]
    assert "skipped" in lines[-1] and "INART_BMV2" in lines[-1]
    data = json.loads(out.read_text())["install"]
    embedded = data["targets"][0]
    assert embedded["switches"] == 2 and embedded["entries"] > 0
    assert embedded["write_ratio"] > 0 and "skipped" in data["targets"][1]


def test_bench_controller_refuses_an_unknown_target() -> None:
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "bench", "controller",
                           "--targets", "tofu"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "argument --targets: 'tofu'" in proc.stderr
