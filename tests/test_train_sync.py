import subprocess
import sys

import pytest

from control_plane.solve import solve
from control_plane.topologies import fig1


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "fig1.json"
    solve(fig1(), "inart").save(path)
    return path


@pytest.mark.parametrize("sync", ["ring", "tree", "selective"])
def test_train_with_other_schemes(plan_file, sync):
    proc = subprocess.run(
        [sys.executable, "-m", "control_plane.cli", "train", "--plan", str(plan_file),
         "--model", "mlp", "--rounds", "15", "--sync", sync, "--quiet"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if sync == "selective":
        assert "average_model_accuracy=" in proc.stdout
    else:
        assert "identical parameters: True" in proc.stdout
