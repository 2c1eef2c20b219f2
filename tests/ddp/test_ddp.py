"""PyTorch over INA: the backend, the DDP hook and `inart train --script`, on loopback PSs."""

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from control_plane.repo import REPO, child_env
from host_stack.ddp.allreduce import INT32_MAX, deal, error_bound, exponent
from host_stack.ddp.job_env import JOB_VAR, JobEnvError, job_file_text, worker_job
from host_stack.ddp.process_group import InartBackendError, route
from host_stack.ina.addresses import loopback
from host_stack.ina.jobplan import star_plan

HERE = Path(__file__).parent


def inart_train(*argv: str, deadline: float = 400) -> subprocess.CompletedProcess:
    """`inart train ARGV` with a --deadline: a rank that never ends fails the job by name,
    and the launcher stops every process it started, before this test's own timeout."""
    if "--" in argv:
        at = argv.index("--")
        argv = (*argv[:at], "--deadline", str(deadline), *argv[at:])
    else:
        argv = (*argv, "--deadline", str(deadline))
    return subprocess.run([sys.executable, "-m", "control_plane.cli", "train", *argv],
                          capture_output=True, text=True, timeout=deadline + 120,
                          env=child_env())


def lines(out: str, event: str) -> list[dict]:
    """The JSON records of one event that rank 0 printed (echoed as '[w1] {...}')."""
    recs = [json.loads(line.split("] ", 1)[1]) for line in out.splitlines()
            if line.startswith("[") and "{" in line]
    return [r for r in recs if r.get("event") == event]


@pytest.fixture(scope="module")
def fig1_plan(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("plan") / "fig1.json"
    subprocess.run([sys.executable, "-m", "control_plane.cli", "plan", "-t", "fig1", "-s",
                    "inart", "--json", str(path)], check=True, env=child_env(),
                   stdout=subprocess.DEVNULL)
    return str(path)


def test_deal_follows_the_shares_and_the_shards():
    assert deal(100, [0.25, 0.75], [100, 100]) == [25, 75]
    assert sum(deal(7, [0.2, 0.3, 0.5], [9, 9, 9])) == 7
    assert deal(10, [0.5, 0.5], [3, 100]) == [3, 7]  # a full PS hands on its excess
    with pytest.raises(ValueError, match="exceed"):
        deal(10, [0.5, 0.5], [3, 3])


def test_the_scale_never_lets_a_sum_leave_int32():
    for workers in (1, 4, 6, 64):
        for top in (1e-30, 3e-7, 1.0, 12345.678, 3e30):
            assert workers * top * 2.0 ** exponent(workers, top) <= INT32_MAX
            assert error_bound(workers, top) >= workers * workers * top / INT32_MAX


def test_route_names_what_neither_path_carries():
    f32, i64 = torch.ones(2), torch.ones(2, dtype=torch.int64)
    assert route([f32], "SUM") == route([f32.half()], "AVG") == "ina"
    assert route([f32], "MAX") == route([i64], "SUM") == "gloo"
    with pytest.raises(InartBackendError, match="BAND on torch.float32"):
        route([f32], "BAND")
    with pytest.raises(InartBackendError, match="one dtype"):
        route([f32, i64], "SUM")


def test_joining_needs_the_job_and_a_matching_world_size(tmp_path):
    with pytest.raises(JobEnvError, match=f"{JOB_VAR} is not set.*inart train --script"):
        worker_job(0, 4, {})
    plan = tmp_path / "plan.json"
    star_plan(4, [0.5, 0.5]).save(plan)
    addresses = tmp_path / "addresses.json"
    addresses.write_text(loopback(["s1", "s2", "w1", "w2", "w3", "w4"]).to_json())
    job = tmp_path / "job.json"
    job.write_text(job_file_text(["--plan", str(plan), "--addresses", str(addresses),
                                  "--model", "synthetic", "--values", "1000"]))
    with pytest.raises(JobEnvError, match=r"world size 3 does not match the plan's 4 workers"):
        worker_job(0, 3, {JOB_VAR: str(job)})
    assert worker_job(2, 4, {JOB_VAR: str(job)}).worker == "w3"


def test_every_collective_on_backend_inart():
    run = inart_train("--plan", "star:4:2", "--script", str(HERE / "ops.py"))
    assert run.returncode == 0, run.stderr[-3000:]
    (rec,) = lines(run.stdout, "checks")
    assert all(rec["checks"].values()), rec["checks"]
    assert rec["stats"]["ina_nonfinite_calls"] == 1 and rec["stats"]["ina_zero_calls"] == 1


@pytest.mark.slow
def test_ddp_over_ina_matches_gloo_within_the_bound(fig1_plan, tmp_path):
    """20 DDP steps from one seed with backend inart, with the hook on a gloo group, and with
    gloo: every rank holds the same parameters, and INA's differ from gloo's by no more than
    the summed per-step bound carried through SGD (lr / (1 - momentum) x the sum of the
    all-reduce bounds, twice for gloo's own float32 rounding) plus 4 ulps of optimizer
    arithmetic."""
    params, bounds = {}, {}
    for backend in ("gloo", "inart", "hook"):
        save = str(tmp_path / f"{backend}-{{rank}}.pt")
        run = inart_train("--plan", fig1_plan, "--script", str(HERE / "ddp_steps.py"), "--",
                          "--backend", backend, "--steps", "20", "--save", save)
        assert run.returncode == 0, run.stderr[-3000:]
        (done,) = lines(run.stdout, "done")
        bounds[backend] = done.get("stats", {}).get("ina_error_bound_sum")
        params[backend] = [torch.load(save.format(rank=r)) for r in range(6)]
        for other in params[backend][1:]:
            assert all(torch.equal(a, b) for a, b in zip(params[backend][0], other, strict=True))
    lr, momentum = 0.1, 0.9
    for backend in ("inart", "hook"):
        assert bounds[backend] > 0
        top = max(float(p.abs().max()) for p in params["gloo"][0])
        tol = lr / (1 - momentum) * 2 * bounds[backend] + 4 * 2.0**-24 * top
        diff = max(float((a - b).abs().max())
                   for a, b in zip(params[backend][0], params["gloo"][0], strict=True))
        print(f"{backend}: max |p - p_gloo| = {diff:.3g} (bound {tol:.3g})")
        assert diff <= tol


def test_a_failed_worker_ends_the_job_with_its_name(tmp_path):
    t0 = time.monotonic()
    run = inart_train("--plan", "star:4:2", "--script", str(HERE / "crash.py"), "--keep-logs",
                      "--", "--die-rank", "2", "--seconds", "120")
    assert run.returncode == 1
    # status 1, or SIGABRT where torch's threads outlive the interpreter's exit
    assert "w3 exited with status" in run.stderr and "rank gave up on purpose" in run.stderr
    assert time.monotonic() - t0 < 60  # long before --seconds: nobody waited on w3
    assert not subprocess.run(["pgrep", "-f", str(HERE / "crash.py")]).returncode == 0


def test_a_killed_ps_ends_the_job_with_its_name():
    proc = subprocess.Popen([sys.executable, "-m", "control_plane.cli", "train", "--plan",
                             "star:4:2", "--script", str(HERE / "crash.py"), "--", "--seconds",
                             "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(), cwd=REPO)
    try:
        assert "started" in proc.stdout.readline()
        time.sleep(1)
        subprocess.run(["pkill", "-9", "-f", "host_stack.ina.ps .*--ps s2"], check=True)
        _, err = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert "s2 exited with status -9" in err


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["inart", "gloo"])
def test_the_resnet_example_runs_unchanged(fig1_plan, backend):
    run = inart_train("--plan", fig1_plan, "--script", str(REPO / "examples/ddp_resnet.py"),
                      "--", "--backend", backend, "--steps", "2", "--batch", "4", "--size", "16")
    assert run.returncode == 0, run.stderr[-3000:]
    (done,) = lines(run.stdout, "done")
    assert done["backend"] == backend and len(lines(run.stdout, "step")) == 2
    assert np.isfinite(done["accuracy"])
