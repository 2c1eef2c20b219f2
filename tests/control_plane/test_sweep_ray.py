"""`inart sweep` on Ray: a head started here on free ports (one for the module: Ray starts
slowly on a loaded machine), plan points that match direct solver calls, a point whose worker
process dies (retried once, then failed with the reason, the others kept), and resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from control_plane.cli.main import main
from control_plane.model.topologies import build_topology
from control_plane.solver.solve import solve
from control_plane.sweep.cluster import LocalHead
from control_plane.sweep.engine import run_sweep
from control_plane.sweep.grid import GridError, build_grid
from control_plane.sweep.kinds import KINDS, Kind
from control_plane.sweep.results import FAILED, OK, ResultLog
from simulation.ina import plan_comm_time
from simulation.profiles import BUILTIN
from simulation.run import simulate

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent
TEST_KINDS = {**KINDS, "test": Kind("test", "sweep_test_kinds:run",
                                               settings=("die_seeds",))}


@pytest.fixture(scope="module")
def head():
    """A Ray head for the module's tests; this directory on the workers' PYTHONPATH (the
    engine passes the driver's PYTHONPATH on), for the test kind."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", str(HERE))
        with LocalHead(cpus=2) as address:
            yield address


def test_plan_points_match_direct_solver_calls(head, tmp_path) -> None:
    grid = build_grid({"kind": "plan", "topologies": "fig1", "schemes": "inart,atp,lbmm",
                       "link_gbps": "10", "models": "resnet50", "seeds": "0-1"}, KINDS)
    outcome = run_sweep(grid, tmp_path, address=head, progress=False)
    assert [r["status"] for r in outcome.rows] == [OK] * 6
    for row in outcome.rows:
        plan = solve(build_topology("fig1"), row["scheme"], seed=row["seed"])
        assert row["rate_units"] == pytest.approx(plan.rate, rel=1e-9)
        unit = 10e9 / 6  # fig1: every link 6 units, the fastest at 10 Gbit/s
        assert row["rate_per_worker_bps"] == pytest.approx(plan.rate * unit)
        assert row["comm_time_s"] == pytest.approx(
            plan_comm_time(plan, BUILTIN["resnet50"].model_bytes, unit))
    assert len(ResultLog(tmp_path).rows()) == 6


def test_simulate_points_match_direct_calls(head, tmp_path) -> None:
    grid = build_grid({"kind": "simulate", "topologies": "fig1", "schemes": "inart,ring",
                       "link_gbps": "10,100", "models": "synthetic:1000000",
                       "settings": {"iterations": 2}}, KINDS)
    outcome = run_sweep(grid, tmp_path, address=head, progress=False)
    assert [r["status"] for r in outcome.rows] == [OK] * 4
    for row in outcome.rows:
        direct = simulate(build_topology("fig1"), row["scheme"], model_bytes=1_000_000,
                          link_gbps=row["link_gbps"], iterations=2, seed=0)
        for name in ("comm_time_s", "total_time_s", "rate_per_worker_bps", "ps_ingress_bytes",
                     "link_bytes", "plan_comm_time_s"):
            assert row[name] == pytest.approx(getattr(direct, name)), name
    assert outcome.rows[0]["comm_time_s"] > outcome.rows[1]["comm_time_s"]  # 10 vs 100 Gbit/s


def test_a_dying_worker_fails_its_point_only(head, tmp_path) -> None:
    grid = build_grid({"kind": "test", "topologies": "fig1", "schemes": "ok,bad",
                       "seeds": "0-2", "settings": {"die_seeds": [1]}}, TEST_KINDS)
    outcome = run_sweep(grid, tmp_path, address=head, kinds=TEST_KINDS, progress=False)
    by = {(r["scheme"], r["seed"]): r for r in outcome.rows}
    assert by["ok", 0]["value"] == 0 and by["ok", 2]["value"] == 20
    assert by["ok", 0]["status"] == by["ok", 2]["status"] == OK
    died = by["ok", 1]
    assert died["status"] == FAILED and died["error"].startswith("worker died (tried 2 times)")
    attempts = (tmp_path / "points" / "test_fig1_ok_-_-_seed1" / "attempts").read_text()
    assert len(attempts.split()) == 2  # Ray's one retry, in a new worker process
    assert len(set(attempts.split())) == 2
    # a runner's own exception: recorded at once with its message, never retried
    bad = by["bad", 0]
    assert bad["status"] == FAILED
    assert bad["error"] == "ValueError: scheme bad cannot run on fig1"
    assert len((tmp_path / "points" / "test_fig1_bad_-_-_seed0" / "attempts")
               .read_text().split()) == 1
    assert len(ResultLog(tmp_path).rows()) == 6


def test_resume_runs_only_what_did_not_finish(head, tmp_path) -> None:
    fields = {"kind": "test", "topologies": "fig1", "schemes": "ok", "seeds": "0-2",
              "settings": {"die_seeds": [2]}}
    first = run_sweep(build_grid(fields, TEST_KINDS), tmp_path, address=head,
                      kinds=TEST_KINDS, progress=False)
    assert (first.ran, len(first.failed)) == (3, 1)
    fields["settings"] = {}  # what killed seed 2 is gone: the rerun finishes it
    again = run_sweep(build_grid(fields, TEST_KINDS), tmp_path, address=head,
                      kinds=TEST_KINDS, progress=False)
    assert (again.ran, again.skipped, again.failed) == (1, 2, [])
    assert [r["value"] for r in again.rows] == [0, 10, 20]
    for seed, tries in ((0, 1), (1, 1), (2, 3)):  # 2 tries in the first run, 1 in the second
        attempts = tmp_path / "points" / f"test_fig1_ok_-_-_seed{seed}" / "attempts"
        assert len(attempts.read_text().split()) == tries


def test_cli_table_files_and_resume(head, tmp_path, capsys) -> None:
    out = tmp_path / "sweep"
    argv = ["sweep", "--kind", "plan", "-t", "fig1", "-s", "inart,lbmm", "--model", "lstm",
            "--ray-address", head, "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "rate_units" in text and "comm_time_s" in text and "2 points (2 run, 0 failed)" in text
    rows = json.loads((out / "results.json").read_text())
    assert [(r["scheme"], round(r["rate_units"], 4)) for r in rows] == [("inart", 2.5),
                                                                         ("lbmm", 1.3333)]
    assert (out / "results.csv").read_text().splitlines()[0].startswith("key,kind,topology")
    assert main(["sweep", "--resume", str(out), "--ray-address", head, "--quiet"]) == 0
    assert "2 points (0 run, 2 already done, 0 failed)" in capsys.readouterr().out
    assert main([*argv, "-s", "atp", "--out", str(out)]) == 2
    assert "holds another grid's results" in capsys.readouterr().err


def test_cli_starts_and_stops_its_own_head(tmp_path, capsys) -> None:
    """Without --ray-address: a head for the sweep alone, gone afterwards."""
    heads = set(Path("/tmp").glob("inart-ray-*"))  # a head's temp dir, removed once it stopped
    assert main(["sweep", "-t", "fig1", "-s", "atp", "--cpus", "1", "--quiet",
                 "--out", str(tmp_path)]) == 0
    assert "1 points (1 run, 0 failed)" in capsys.readouterr().out
    assert set(Path("/tmp").glob("inart-ray-*")) <= heads


def test_a_resource_no_node_offers_is_refused_at_once(head, tmp_path) -> None:
    """Ray would keep such tasks pending forever."""
    kinds = {"tofino": Kind("tofino", "sweep_test_kinds:run", resources={"tofino": 1.0})}
    grid = build_grid({"kind": "tofino", "topologies": "fig1", "schemes": "ok"}, kinds)
    with pytest.raises(GridError, match="no node of the cluster offers the Ray resource "
                                        "'tofino'"):
        run_sweep(grid, tmp_path, address=head, kinds=kinds, progress=False)
    assert ResultLog(tmp_path).rows() == []
