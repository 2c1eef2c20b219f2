import json
import subprocess
import sys

import pytest

from control_plane.cli.main import build_parser, main
from control_plane.model.topologies import fig1
from control_plane.repo import child_env
from control_plane.solver.solve import solve
from host_stack.cli.train import SCRIPT_FLAGS
from host_stack.train.jobargs import GIVEN
from host_stack.train.models import build_model
from host_stack.train.sync_registry import MODES, mode_flags

MLP_BYTES = 4 * sum(p.numel() for p in build_model("mlp", 0).parameters())


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "fig1.json"
    solve(fig1(), "inart").save(path)
    return path


@pytest.mark.parametrize("sync", ["ring", "tree", "selective"])
def test_train_with_other_schemes(plan_file, sync, tmp_path):
    """Run where a user runs it: the report, table and plot land under ./out/train/."""
    report = tmp_path / "out" / "train" / "train.json"
    proc = subprocess.run(
        [sys.executable, "-m", "control_plane.cli", "train", "--plan", str(plan_file),
         "--model", "mlp", "--rounds", "15", "--sync", sync,
         *([] if sync == "selective" else ["--quiet", "--plot"])],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=child_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    if sync == "selective":
        assert "average_model_accuracy=" in proc.stdout
        assert "average_model_accuracy" in json.loads(report.read_text())
        return
    assert (report.with_name("train.png").stat().st_size > 0
            and report.with_name("train.csv").read_text().startswith("round,"))
    assert "identical parameters: True" in proc.stdout
    # the table's communication columns are measured, as for INA:
    # ring and RAT trees send 2(W-1)/W of the gradient per worker and round, W = 6 on fig1
    rounds = json.loads(report.read_text())["rounds"]
    assert [r["bytes"] for r in rounds] == [pytest.approx(2 * 5 / 6 * MLP_BYTES)] * 15
    assert all(0 < r["comm_s"] <= r["round_s"] and r["rate_mbps"] > 0 for r in rounds)


@pytest.mark.parametrize("sync, argv, named", [
    ("selective", ["--window", "32", "--impair", "loss=0.1"], "--impair, --window"),
    ("selective", ["--quiet", "--csv", "x.csv"], "--csv, --quiet"),
    ("ring", ["--unit-bps", "1e6"], "--unit-bps"),
    ("torch", ["--checkpoint-dir", "ckpt"], "--checkpoint-dir"),
    ("ina", ["--group-p", "3"], "--group-p"),
])
def test_an_option_the_mode_does_not_use_is_refused_by_name(sync, argv, named, capsys):
    """Given explicitly (--window 32 is also the default) but ignored."""
    rc = main(["train", "--plan", "star:2:1", "--model", "mlp", "--rounds", "2",
               "--sync", sync, *argv])
    assert rc == 2
    assert f"{named}: not used by --sync {sync} (it uses " in capsys.readouterr().err


def test_every_train_option_is_used_by_some_mode_and_defaults_are_not_given():
    args = build_parser(["train"]).parse_args(["train", "--plan", "p.json"])
    options = set(vars(args)) - {"inart_command", "func", GIVEN}
    assert set().union(*(mode_flags(m) for m in MODES), SCRIPT_FLAGS) == options
    assert getattr(args, GIVEN) == {"plan"}


def test_job_options_name_every_model_without_importing_torch():
    from host_stack.train.jobargs import MODEL_NAMES
    from host_stack.train.models import MODELS

    assert sorted(MODEL_NAMES) == sorted(MODELS)


def test_the_plot_title_names_pss_only_where_the_mode_has_them():
    from host_stack.cli.train import title
    from host_stack.ina.jobplan import job_plan, star_plan
    from host_stack.train.launcher import TrainResult

    result = TrainResult(job_plan(star_plan(6, [0.5, 0.5])), [], [])
    assert title(result, "ring") == "ring: 6 workers"
    assert title(result, "tree") == "tree: 6 workers"
    assert title(result, "ina").endswith("(ina): 6 workers, 2 PSs")
