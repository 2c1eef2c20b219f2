"""The fork server: a child in a given network namespace, its output, exit status and reaping;
a dead server fails its children's waits with a clear error instead of a hang."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from host_stack.train.forkserver import (
    TORCH_PRELOAD,
    WORKER_MODULE,
    ForkServer,
    ForkServerError,
    forked_module,
    preload_for,
)

PROBE = "tests.forkserver_probe"


@pytest.fixture
def netns():
    """A process in a network namespace of its own (what a Mininet host's shell is)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1)")
    proc = subprocess.Popen(["unshare", "--net", "sleep", "120"])
    deadline = time.monotonic() + 10
    mine = os.stat("/proc/self/ns/net").st_ino
    while os.stat(f"/proc/{proc.pid}/ns/net").st_ino == mine:
        assert time.monotonic() < deadline, "unshare did not enter a new namespace"
        time.sleep(0.02)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def server(tmp_path):
    fs = ForkServer(tmp_path / "server.stderr")
    yield fs
    fs.close()


def _zombie(pid: int) -> bool:
    try:
        return ") Z " in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False


def test_child_runs_in_the_target_namespace_and_its_exit_status_is_reported(
        server, netns, tmp_path):
    err = open(tmp_path / "probe.stderr", "w")  # noqa: SIM115 (as hostrun does: closed at once)
    proc = server.spawn(PROBE, ["7"], dict(os.environ, PROBE="seen"), netns.pid,
                        stdout=subprocess.PIPE, stderr=err, text=True)
    err.close()
    rec = json.loads(proc.stdout.readline())
    assert rec["netns"] == os.stat(f"/proc/{netns.pid}/ns/net").st_ino
    assert rec["netns"] != os.stat("/proc/self/ns/net").st_ino
    assert rec["pid"] == proc.pid and rec["sid"] == proc.pid  # a session leader: killpg works
    assert rec["argv"] == ["7"] and rec["probe"] == "seen" and rec["cwd"] == os.getcwd()
    assert proc.wait(timeout=10) == 7 and proc.returncode == 7
    assert (tmp_path / "probe.stderr").read_text() == "probe stderr line\n"
    assert proc.stdout.read() == ""  # EOF: nobody else holds the pipe's write end
    assert not Path(f"/proc/{proc.pid}").exists() or not _zombie(proc.pid)  # reaped
    assert server.pid is not None  # and the server serves on


def test_without_a_namespace_the_child_stays_in_ours(server):
    proc = server.spawn(PROBE, ["0"], dict(os.environ), None, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read().splitlines()
    assert json.loads(out[0])["netns"] == os.stat("/proc/self/ns/net").st_ino
    assert out[1] == "probe stderr line"
    assert proc.wait(timeout=10) == 0


def test_a_missing_module_fails_like_python_dash_m(server, tmp_path):
    with open(tmp_path / "err", "w") as err:
        proc = server.spawn("no_such_module_here", [], dict(os.environ), None, stderr=err)
    assert proc.wait(timeout=10) == 1
    assert "No module named no_such_module_here" in (tmp_path / "err").read_text()


def test_a_signalled_child_reports_the_signal(server):
    proc = server.spawn(PROBE, ["0", "wait", "60"], dict(os.environ), None,
                        stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    assert proc.poll() is None
    proc.terminate()
    assert proc.wait(timeout=10) == -signal.SIGTERM


def test_a_dead_server_fails_the_wait_at_once(server):
    proc = server.spawn(PROBE, ["0", "wait", "60"], dict(os.environ), None,
                        stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    os.kill(server.pid, signal.SIGKILL)
    t0 = time.monotonic()
    assert proc.stdout.read() == ""  # the child died with the server (PR_SET_PDEATHSIG)
    with pytest.raises(ForkServerError, match=r"fork server \(pid \d+\) exited with status -9"):
        proc.wait(timeout=30)
    assert time.monotonic() - t0 < 10
    with pytest.raises(ForkServerError, match="exited with status -9"):
        server.spawn(PROBE, ["0"], dict(os.environ), None)


def test_closing_the_server_stops_its_children(tmp_path):
    fs = ForkServer(tmp_path / "server.stderr")
    proc = fs.spawn(PROBE, ["0", "wait", "60"], dict(os.environ), None,
                    stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    fs.close()
    assert proc.stdout.read() == ""
    assert not Path(f"/proc/{proc.pid}").exists() or _zombie(proc.pid) is False


def test_only_training_workers_are_forked_and_synthetic_ones_skip_torch():
    assert forked_module([sys.executable, "-m", WORKER_MODULE, "--worker", "w1"]) == WORKER_MODULE
    assert forked_module([sys.executable, "-m", "host_stack.ina.ps"]) is None
    assert forked_module(["/other/python", "-m", WORKER_MODULE]) is None
    assert preload_for(WORKER_MODULE, ["--model", "cnn"]) == [WORKER_MODULE, *TORCH_PRELOAD]
    assert preload_for(WORKER_MODULE, []) == [WORKER_MODULE, *TORCH_PRELOAD]  # cnn: default
    assert preload_for(WORKER_MODULE, ["--model", "synthetic"]) == [WORKER_MODULE]
    assert preload_for(PROBE, []) == []  # importing a script would run it
