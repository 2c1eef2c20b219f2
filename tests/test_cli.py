import json
import subprocess
import sys

import pytest

from control_plane.cli import main as cli
from control_plane.model.plan import Plan
from control_plane.repo import child_env


def test_every_registered_module_has_register():
    for name, (module, _) in cli.COMMANDS.items():
        assert callable(cli.load_register(module)), name


def test_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "control_plane.cli", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for name in cli.COMMANDS:
        assert name in out


def test_unknown_command_fails_cleanly():
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "nope"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "control_plane.cli", *args],
                          capture_output=True, text=True, timeout=300)


def test_plan_fig1_table_and_json(tmp_path):
    proc = run_cli("plan", "--topology", "fig1", "--scheme", "inart,atp", "--out",
                   str(tmp_path / "out"), "--json", str(tmp_path / "plans.json"),
                   "--csv", str(tmp_path / "t.csv"))
    assert proc.returncode == 0, proc.stderr
    assert "inart" in proc.stdout and "2.5" in proc.stdout
    both = json.loads((tmp_path / "plans.json").read_text())
    assert sorted(both) == ["atp", "inart"] and both["inart"]["scheme"] == "inart"
    assert (tmp_path / "out" / "inart.json").exists()
    assert (tmp_path / "t.csv").read_text().startswith("scheme,rate")


def test_plan_states_every_rate_against_a_bound(tmp_path):
    import csv

    from control_plane.model.topologies import fig1
    from control_plane.solver.solve import any_plan_bound

    proc = run_cli("plan", "-t", "fig1", "-s", "inart,atp", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "rate/bound: the rate over the plan's upper_bound" in proc.stdout
    rows = {r["scheme"]: r for r in csv.DictReader(open(tmp_path / "plan.csv"))}
    inart, atp = rows["inart"], rows["atp"]
    assert float(inart["rate/bound"]) == round(2.5 / float(inart["upper_bound"]), 3)
    assert float(atp["rate/bound"]) == round(2.0 / any_plan_bound(fig1()), 3)


def test_plan_keeps_every_plan_and_the_table_under_out_plan(tmp_path):
    """Run where a user runs it (not the checkout): the results land in that directory."""
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "plan", "-t", "fig1",
                           "-s", "inart,atp"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=child_env())
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out" / "plan"
    assert Plan.load(out / "atp.json").scheme == "atp"
    assert Plan.load(out / "inart.json").rate == pytest.approx(2.5)
    assert (out / "plan.csv").read_text().startswith("scheme,rate")
    assert "wrote out/plan/<scheme>.json (inart, atp) and out/plan/plan.csv" in proc.stdout


def test_plan_bad_input_is_a_clear_error():
    proc = run_cli("plan", "--topology", "fattree:5")
    assert proc.returncode == 2 and "k=5" in proc.stderr
    proc = run_cli("plan", "--scheme", "best")
    assert proc.returncode == 2 and "--scheme" in proc.stderr and "unknown: best" in proc.stderr


def test_emulate_refuses_a_pace_outside_0_to_1_by_name():
    for pace in ("0", "1.5", "-0.1"):
        proc = run_cli("emulate", "--pace", pace, "--out", "/nonexistent/never-written")
        assert proc.returncode == 2 and "--pace" in proc.stderr, (pace, proc.stderr)
