"""Failure drills (`inart drill`, emulation/runs/drills/): each on a fig1 emulation with a
job under `inart serve`, seeded, under a deadline.  A drill passes when the job finished with
every round's sums exact against numpy on every worker, or every surviving worker ended with
the same named error within the deadline; and nothing it started is left behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.repo import REPO, child_env
from emulation.bench.drill import drill_figure
from emulation.runs.drills.drill import Drill
from emulation.runs.drills.outcome import DrillResult, named_error

DEADLINE_S = 180.0  # per drill; past it the drill fails (it does not hang)
ROUNDS = 10


def emulated(test):
    """Root and Mininet (skipped with the reason without them), and slow."""
    marks = (pytest.mark.root, pytest.mark.slow,
             pytest.mark.usefixtures("needs_mininet_and_program"))
    for mark in marks:
        test = mark(test)
    return test


def inart(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", *args], cwd=REPO,
                          env=child_env(), capture_output=True, text=True, timeout=timeout)


def drill(name: str, tmp_path: Path, seed: int = 0) -> DrillResult:
    result = Drill(name, seed, DEADLINE_S, tmp_path / name, ROUNDS).run()
    print(result.line())
    assert result.wall_s < DEADLINE_S + 60, result.line()  # its own teardown included
    assert not result.leftovers, result.line()
    assert result.recovery_s is not None and 0 < result.recovery_s < DEADLINE_S, result.line()
    return result


def test_a_seed_picks_the_same_fault_every_time(tmp_path: Path) -> None:
    drills = [Drill("ps-kill", 7, 60, tmp_path, ROUNDS) for _ in range(2)]
    assert drills[0].fault_round == drills[1].fault_round
    assert drills[0].fault_delay == drills[1].fault_delay
    assert 1 <= drills[0].fault_round <= ROUNDS - 4  # three rounds at least after the fault
    other = [Drill("ps-kill", s, 60, tmp_path, ROUNDS).fault_delay for s in range(5)]
    assert len(set(other)) == 5


@pytest.mark.parametrize(("argv", "flag"), [
    (["bogus"], "DRILL"),
    (["--rounds", "3"], "--rounds"),
    (["--deadline", "0"], "--deadline"),
])
def test_bad_input_is_one_line_naming_the_flag_before_any_work(argv, flag) -> None:
    done = inart("drill", *argv, timeout=60)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("inart drill: error: argument") and flag in last, done.stderr


@emulated
def test_switch_killed_and_restarted_mid_round_through_the_cli(tmp_path: Path) -> None:
    """The aggregating switch loses its registers and entries; the service's reconcile
    reinstalls it; the workers' retransmissions carry the round; every sum exact."""
    done = inart("drill", "switch-restart", "--rounds", str(ROUNDS), "--deadline",
                 str(DEADLINE_S), "--out", str(tmp_path / "out"), "--json", "-",
                 timeout=DEADLINE_S + 120)
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = json.loads(done.stdout)
    assert row["ok"] and row["outcome"] == "exact", row
    assert row["rounds"] == ROUNDS and not row["leftovers"], row
    assert "the service reinstalled it" in row["fault"] and "pipeline pushed" in row["fault"]
    assert 0 < row["recovery_s"] < DEADLINE_S, row
    assert done.stderr.count("drill switch-restart: ok, outcome exact") == 1, done.stderr


@emulated
@pytest.mark.parametrize(("name", "promise"), [
    ("ps-kill", "named-error"),  # every worker: PsUnreachable naming the killed PS
    ("worker-kill", "named-error"),  # every other worker: PsUnreachable
    ("link-flap", "exact"),  # the service not told: retransmissions carry every flap
    ("service-restart", "exact"),  # the hosts ask the restarted service again
    ("p4rt-silent", "exact"),  # the switch forwards; the service loses it and finds it again
])
def test_each_drill_keeps_its_promise(name: str, promise: str, tmp_path: Path) -> None:
    result = drill(name, tmp_path)
    assert result.ok and result.outcome == promise, result.line()
    if promise == "exact":
        assert result.rounds == ROUNDS, result.line()
    if name == "ps-kill":
        assert result.error == f"PsUnreachable (PS {result.fault.split()[1]})", result.line()
    elif name == "worker-kill":
        assert result.error.startswith("PsUnreachable (PS "), result.line()
    elif name == "service-restart":
        assert "listening again" in result.fault, result.line()
    elif name == "p4rt-silent":
        assert "the service saw it unreachable" in result.fault, result.line()
        slowest = float(result.fault.split("GetTopology answered within ")[1].split()[0])
        assert slowest < 2.0, result.line()  # the API did not wait for the silent switch


def test_a_workers_error_line_gives_its_named_error() -> None:
    assert named_error("worker w1: error: worker rank 0: PS s1 at ('10.2.0.2', 47000) did not "
                       "answer chunk 0 of round 7 after 30 retransmissions (job 16)") == \
        "PsUnreachable (PS s1)"
    assert named_error("worker w2: error: worker rank 1: no HELLO reply from PS s2 at "
                       "('10.2.0.3', 47000) within 30 s (job 1)") == "PsUnreachable (PS s2)"
    assert named_error("worker w3: error: service unix:/x.sock: ReportProgress for job 1: "
                       "UNAVAILABLE: failed to connect") == \
        "FollowError (ReportProgress: UNAVAILABLE)"
    assert named_error("Traceback (most recent call last):\nKeyError: 3") is None


@emulated
def test_a_drill_past_its_deadline_fails_loudly_and_leaves_nothing(tmp_path: Path) -> None:
    result = Drill("switch-restart", 0, 25.0, tmp_path / "late", rounds=60).run()
    print(result.line())
    assert result.outcome == "failed" and "deadline" in result.detail, result.line()
    assert "FAILED" in result.line() and result.wall_s < 25.0 + 60, result.line()
    assert not result.leftovers, result.line()


def test_the_bench_line_meets_its_goal_only_when_the_drill_kept_its_promise() -> None:
    kept = DrillResult("switch-restart", 0, "exact", 5.0, "switch v1 killed", 12, 1.25)
    fig = drill_figure(kept, 180.0)
    assert fig["met"] and fig["value"] == 5.0 and fig["in_rounds"] == 4.0, fig
    assert fig["goal"] == "<= 180" and fig["ratio"] == round(5.0 / 180, 3), fig
    late = DrillResult("switch-restart", 0, "exact", 200.0, "switch v1 killed", 12, 1.25)
    assert not drill_figure(late, 180.0)["met"]
    # a named error where the drill promises exact sums: not met, whatever the time
    broke = DrillResult("link-flap", 0, "named-error", 3.0, "link s1-v1 down", 4, 1.0,
                        error="PsUnreachable (PS s1)", detail="job stopped")
    fig = drill_figure(broke, 180.0)
    assert not fig["met"] and fig["error"] == "PsUnreachable (PS s1)", fig
    hung = DrillResult("ps-kill", 0, "failed", None, "PS s1 killed", 3, None,
                       detail="worker w1 still running at the deadline of 180 s")
    fig = drill_figure(hung, 180.0)
    assert not fig["met"] and "still running" in fig["why"] and fig["in_rounds"] is None, fig
