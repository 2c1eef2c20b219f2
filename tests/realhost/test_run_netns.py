"""`inart run --inventory` end to end on hosts that are network namespaces of this machine and
embedded switches started alone (no Mininet): what a user with real hosts and standalone
switches runs.  fig1, the inart plan: synthetic mode with every round's sums checked against
numpy, one host reached over SSH (sshd in its namespace), and training, whose accuracy and
parameters must equal `inart train`'s on loopback for the same plan and seed.

Run under the emulation lock: ``flock /tmp/inart-emu.lock pytest tests/realhost``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import yaml

from control_plane.deploy.pipeline import Pipeline
from control_plane.model.topologies import fig1
from control_plane.repo import REPO, child_env
from realhosts import lab as lab_module
from tests.realhost.sshd import sshd_unavailable, start_sshd

pytestmark = pytest.mark.root
ROUNDS = 3
TRAIN_ROUNDS = 12  # as tests/emulation/test_service_training.py


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    reason = lab_module.unavailable()
    if reason:
        pytest.skip(reason)
    Pipeline().check()
    tmp = tmp_path_factory.mktemp("lab")
    with ExitStack() as stack:
        stack.callback(lab_module.down, "irn")
        lab = lab_module.up(fig1(), "fig1", tmp / "logs", "irn")
        lab.tmp = tmp
        yield lab, stack


def inart(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", *args], cwd=REPO,
                          env=child_env(), capture_output=True, text=True, timeout=timeout)


def run_inventory(tmp: Path, doc: dict, *extra: str, rounds: int = ROUNDS
                  ) -> tuple[subprocess.CompletedProcess, dict]:
    inv = tmp / "hosts.yaml"
    inv.write_text(yaml.safe_dump(doc))
    out = tmp / "out"
    proc = inart("run", "--inventory", str(inv), "--rounds", str(rounds), "--quiet",
                 "--out", str(out), *extra)
    print(proc.stdout, proc.stderr[-3000:])
    rows = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else [{}]
    return proc, rows[0]


def no_job_processes() -> list[str]:
    ps = subprocess.run(["ps", "-eww", "-o", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if "/inart-run-" in line  # this test's runs
            and ("host_stack.ina.ps" in line or "host_stack.train.worker" in line)]


def test_synthetic_every_sum_exact(lab, tmp_path):
    lab_, _ = lab
    proc, row = run_inventory(tmp_path, lab_.inventory(), "--values", str(32 * 600))
    assert proc.returncode == 0, proc.stderr
    assert row["exact"] is True and row["rounds"] == ROUNDS
    assert row["aggregated_out"] > 0  # the switches aggregated
    assert 0.85 <= row["rate_ratio"] <= 1.15, row
    assert any(line.split()[:2] == ["scheme", "plan"] and line.endswith("exact")
               for line in proc.stdout.splitlines())  # the emulation's table
    assert no_job_processes() == []


def test_one_host_over_ssh(lab, tmp_path):
    lab_, stack = lab
    reason = sshd_unavailable()
    if reason:
        pytest.skip(reason)
    fields = start_sshd(lab_, "w1", lab_.tmp, stack)
    doc = lab_.inventory({"w1": {**fields, "python": sys.executable, "repo": str(REPO)}})
    doc["ssh"] = {"options": ["UserKnownHostsFile=/dev/null", "StrictHostKeyChecking=no"]}
    proc, row = run_inventory(tmp_path, doc, "--values", str(32 * 300))
    assert proc.returncode == 0, proc.stderr
    assert row["exact"] is True
    assert no_job_processes() == []


def test_train_same_accuracy_as_loopback_reference(lab, tmp_path):
    lab_, _ = lab
    proc, row = run_inventory(tmp_path, lab_.inventory(), "--mode", "train",
                              rounds=TRAIN_ROUNDS)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("train:"))
    assert "same parameters on every worker: yes" in line
    plan = tmp_path / "out" / "hosts" / "plan.json"
    ref = inart("train", "--plan", str(plan), "--model", "mlp", "--rounds", str(TRAIN_ROUNDS),
                "--seed", "0", "--quiet", "--json", str(tmp_path / "ref.json"))
    assert ref.returncode == 0, ref.stderr
    want = json.loads((tmp_path / "ref.json").read_text())
    print(line, "reference accuracy", want["summary"]["accuracy"])
    assert row["accuracy"] == want["summary"]["accuracy"]
    assert row["params_sha256"] == want["workers"][0]["params_sha256"]
    assert row["accuracy"] > 0.2  # it learned (10 classes; 0.36 after 12 rounds here)


@contextmanager
def running(lab_, tmp_path: Path, *extra: str) -> Iterator[subprocess.Popen]:
    """`inart run` in the background, entered once its workers are running; interrupted
    (then killed) on the way out if a check failed before it ended."""
    inv = tmp_path / "hosts.yaml"
    inv.write_text(yaml.safe_dump(lab_.inventory()))
    proc = subprocess.Popen([sys.executable, "-m", "control_plane.cli", "run", "--inventory",
                             str(inv), "--rounds", "50", "--quiet", "--out",
                             str(tmp_path / "out"), *extra], cwd=REPO, env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not any(
                "host_stack.train.worker" in line for line in no_job_processes()):
            time.sleep(0.2)
        time.sleep(2)  # the job is running
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


def test_ctrl_c_stops_every_process_on_every_host(lab, tmp_path):
    with running(lab[0], tmp_path) as proc:
        assert no_job_processes() != []
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, err
    assert "interrupted; every process on every host stopped" in err
    assert no_job_processes() == []


def test_a_failing_host_stops_the_job(lab, tmp_path):
    with running(lab[0], tmp_path) as proc:
        victim = next(line for line in no_job_processes() if "--worker w3" in line)
        os.kill(int(victim.split()[0]), signal.SIGKILL)
        err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 1, err
    assert "w3 exited with status -9" in err and "every process on every host stopped" in err
    assert no_job_processes() == []


def test_the_deadline_stops_the_job(lab, tmp_path):
    with running(lab[0], tmp_path, "--deadline", "20") as proc:
        err = proc.communicate(timeout=90)[1]
    assert proc.returncode == 1, err
    assert "deadline of 20 s passed" in err
    assert no_job_processes() == []


def test_a_ddp_script_on_the_hosts(lab, tmp_path):
    """`inart run --script`: an unchanged DDP example on every worker namespace, its
    all-reduces aggregated by the standalone switches."""
    lab_, _ = lab
    proc, row = run_inventory(tmp_path, lab_.inventory(), "--mode", "train", "--script",
                              str(REPO / "examples/ddp_gpt.py"), "--", "--backend", "inart",
                              "--steps", "2", "--width", "32", "--layers", "1",
                              "--context", "8", "--vocab", "8")
    assert proc.returncode == 0, proc.stderr
    assert sum(ev.get("aggregated_out", 0) for ev in row["switch_events"].values()) > 0
    assert any('"done"' in line for line in row["rank0_lines"])
    assert "switches sent" in proc.stdout
