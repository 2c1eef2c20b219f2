"""Real PS balancing on namespaces + veth + tc (needs root): runs, measures, cleans up."""

from __future__ import annotations

import os
import subprocess

import pytest

from control_plane.cli.main import main

pytestmark = [pytest.mark.root, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for netns and tc")]


def _our_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    tag = f"pb{os.getpid() % 0xFFFF:04x}"
    return [line for line in out.stdout.splitlines() if line.startswith(tag)]


def test_ps_balance_quick_experiment_runs_and_cleans_up(tmp_path, capsys) -> None:
    assert main(["experiment", "ps-balance", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "aware x" in out and "alexnet" in out
    assert (tmp_path / "ps_balance.png").stat().st_size > 10_000
    rows = (tmp_path / "iterations.csv").read_text().splitlines()
    assert len(rows) > 10
    assert _our_namespaces() == []
