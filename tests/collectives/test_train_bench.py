"""Training over each collective, the launcher's error path, and the benchmark's plumbing."""

from __future__ import annotations

import argparse
import json

import pytest

from host_stack.collectives import bench
from host_stack.collectives.launch import LaunchError, run_processes
from host_stack.collectives.train import train_collective


@pytest.mark.parametrize("scheme", ["ring", "tree", "rsgcm"])
def test_training_matches_torch_all_reduce(scheme: str) -> None:
    ref = train_collective("torch", world=3, rounds=25, batch_size=16, lr=0.05)
    got = train_collective(scheme, world=3, rounds=25, batch_size=16, lr=0.05)
    assert got["replica_max_diff"] == 0.0  # every rank ends with the same parameters
    assert got["final_loss"] == pytest.approx(ref["final_loss"], rel=1e-3)
    assert got["accuracy"] == pytest.approx(ref["accuracy"], abs=0.02)
    assert len(got["per_round"]) == 25
    assert all(r["comm_s"] <= r["round_s"] for r in got["per_round"])
    assert got["per_round"][-1]["loss"] < got["per_round"][0]["loss"]


def _fails(rank: int, world: int, device, msg: str) -> None:
    if rank == 1:
        raise RuntimeError(msg)


def test_worker_failure_reported_with_traceback() -> None:
    with pytest.raises(LaunchError, match="rank 1 failed(.|\n)*boom"):
        run_processes(_fails, 2, args=("boom",), timeout_s=60)


def test_bad_backend_and_world_named() -> None:
    with pytest.raises(ValueError, match="backend 'mpi'"):
        run_processes(_fails, 2, args=("x",), backend="mpi")
    with pytest.raises(ValueError, match="world"):
        train_collective("ring", world=0)
    with pytest.raises(ValueError, match="scheme 'star'"):
        train_collective("star", world=2)


def test_bench_runs_and_reports_ratios(tmp_path, capsys) -> None:
    parser = argparse.ArgumentParser()
    bench.configure(parser)
    args = parser.parse_args(["--worlds", "2", "--sizes", "4K", "16M", "--iters", "1",
                              "--warmup", "0", "--out", str(tmp_path / "b")])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    for scheme in ("ring", "tree", "rsgcm", "torch"):
        assert scheme in text
    assert "ring / torch at >= 16M" in text
    out = tmp_path / "b"  # --out is a directory, as everywhere
    assert (out / "collectives.png").stat().st_size > 0 and (out / "collectives.csv").exists()
    assert json.loads((out / "collectives.json").read_text())


def test_parse_size() -> None:
    assert bench.parse_size("64M") == 64 << 20 and bench.parse_size("4096") == 4096
    with pytest.raises(argparse.ArgumentTypeError, match="size 'x'"):
        bench.parse_size("x")
