"""The PS and worker entry points as separate OS processes (what one host runs)."""

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from host_stack.ina.addresses import loopback
from host_stack.ina.jobplan import star_plan
from host_stack.train.models import build_model, flat_params

ROOT = Path(__file__).resolve().parent.parent


def write_job(tmp_path, workers=2, shares=(0.5, 0.5)):
    plan = star_plan(workers, list(shares))
    plan.save(tmp_path / "plan.json")
    ids = plan.topology.pss + plan.topology.workers
    (tmp_path / "addr.json").write_text(loopback(ids).to_json())
    return ["--plan", str(tmp_path / "plan.json"), "--addresses", str(tmp_path / "addr.json")]


def python_m(module, *args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", module, *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_ps_checkpoints_its_shard_on_sigusr1_and_writes_stats_on_sigterm(tmp_path):
    job = write_job(tmp_path)
    ckpt_dir, stats = tmp_path / "ckpt", tmp_path / "stats.json"
    ps = python_m("host_stack.ina.ps", *job, "--ps", "s2", "--model", "mlp",
                  "--checkpoint-dir", str(ckpt_dir), "--stats", str(stats))
    try:
        assert select.select([ps.stdout], [], [], 60)[0], "PS did not start in 60 s"
        ready = json.loads(ps.stdout.readline())
        assert ready["event"] == "ready" and ready["ps"] == "s2"
        first, end = ready["range"]
        ps.send_signal(signal.SIGUSR1)
        path = ckpt_dir / "s2-job1.npz"
        deadline = time.monotonic() + 10
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        ckpt = np.load(path)
        flat = np.zeros(end * 32, np.float32)
        params = flat_params(build_model("mlp", 0)).numpy()
        flat[:params.size] = params[:end * 32]
        np.testing.assert_array_equal(ckpt["params"], flat[first * 32:end * 32])
        assert (ckpt["completed_round"] == -1).all() and str(ckpt["ps"]) == "s2"
    finally:
        ps.send_signal(signal.SIGTERM)
        ps.wait(timeout=10)
    assert ps.returncode == 0
    assert json.loads(stats.read_text())["checkpoints"] == 1


def test_entry_points_reject_bad_input_clearly(tmp_path):
    job = write_job(tmp_path)
    ps = python_m("host_stack.ina.ps", *job, "--ps", "s7")
    _, err = ps.communicate(timeout=60)
    assert ps.returncode == 2 and "--ps s7" in err
    worker = python_m("host_stack.train.worker", *job, "--worker", "w9", "--rounds", "1")
    _, err = worker.communicate(timeout=60)
    assert worker.returncode == 2 and "worker 'w9'" in err


def test_worker_without_ps_fails_with_a_clear_error(tmp_path):
    job = write_job(tmp_path, workers=1, shares=(1.0,))
    worker = python_m("host_stack.train.worker", *job, "--worker", "w1", "--rounds", "1",
                      "--model", "synthetic", "--values", "64", "--max-retries", "2",
                      "--timeout", "0.05", "--hello-timeout", "2")
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 3
    assert "no HELLO reply from PS s1" in err


def test_synthetic_ps_and_workers_never_import_torch(tmp_path):
    """Traffic-only hosts stay numpy-only (~30 MB, not ~260 MB each): an emulation runs 50
    workers of them.  ``-X importtime`` lists every module a process imported on stderr."""
    from host_stack.train.worker import expected_digests

    job = write_job(tmp_path, workers=2, shares=(1.0,))
    job = [*job, "--model", "synthetic", "--values", "300", "--n", "32"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = [sys.executable, "-X", "importtime", "-m"]
    ps = subprocess.Popen([*run, "host_stack.ina.ps", *job, "--ps", "s1", "--mode", "sum",
                           "--idle-exit", "5"], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    workers = [subprocess.Popen([*run, "host_stack.train.worker", *job, "--worker", w,
                                 "--rounds", "2"], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for w in ("w1", "w2")]
    try:
        outs = [w.communicate(timeout=120) for w in workers]
    finally:
        ps.terminate()
        _, ps_err = ps.communicate(timeout=30)
    assert [w.returncode for w in workers] == [0, 0], [err[-500:] for _, err in outs]
    rounds = [json.loads(line) for line in outs[0][0].splitlines()
              if json.loads(line)["event"] == "round"]
    # the run did its work: every round's sums are numpy's
    assert [r["result_sha256"] for r in rounds] == expected_digests(2, 2, 300)
    for name, err in [("ps", ps_err), *(("worker", e) for _, e in outs)]:
        imported = {line.rsplit("|", 1)[-1].strip() for line in err.splitlines()
                    if line.startswith("import time:")}
        assert "numpy" in imported, f"{name}: -X importtime listed nothing"
        assert "torch" not in imported, f"{name} imported torch"
