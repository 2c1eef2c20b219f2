"""`inart bench observe` on fig1, shortest: one labelled line with the cost, its ratio and
goal, and the same figure as JSON, every run's sums exact."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from control_plane.repo import REPO, child_env

pytestmark = [pytest.mark.root, pytest.mark.slow,
              pytest.mark.usefixtures("needs_mininet_and_program")]


def test_bench_observe_prints_its_figure_line_and_json() -> None:
    done = subprocess.run([sys.executable, "-m", "control_plane.cli", "bench", "observe",
                           "--pairs", "1", "--rounds", "2", "--values", str(32 * 300),
                           "--json", "-"], capture_output=True, text=True, cwd=REPO,
                          env=child_env(), timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # with --json -, stdout is the JSON only and the line goes to stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("observe."))
    assert line.startswith("observe.round_time_cost[fig1]") and "goal <= 0.02" in line, line
    (figure,) = json.loads(done.stdout)
    assert figure["unit"] == "fraction" and figure["exact"] is True
    assert len(figure["runs"]["with"]) == len(figure["runs"]["without"]) == 1
    assert figure["ratio"] == pytest.approx(figure["value"] + 1, abs=1e-3)
