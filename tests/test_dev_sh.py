"""./dev.sh's apt step when another apt run holds the dpkg lock: it says who holds it, waits
for it, and only then runs apt-get (told to wait too); past its wait it fails with one line.

The lock is a temporary file locked the way apt locks its own (fcntl), by a child process;
dpkg and apt-get are stubs on PATH inside the test only (every package "missing"; apt-get
records when it ran and with what)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from control_plane.repo import REPO

HOLD = """
import fcntl, sys, time
with open(sys.argv[1], "w") as lock:
    fcntl.lockf(lock, fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    open(sys.argv[3], "w").write(repr(time.time()))
"""


@pytest.fixture
def stubs(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dpkg").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "apt-get").write_text(
        f'#!/bin/sh\necho "$(date +%s.%N) $*" >>{tmp_path / "apt-get.log"}\n')
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    return bin_dir


def apt_setup(stubs: Path, lock: Path, wait_s: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}",
           "DEV_SH_DPKG_LOCKS": str(lock), "DEV_SH_APT_LOCK_WAIT_S": str(wait_s)}
    return subprocess.run(["bash", "-c", "source ./dev.sh && apt_setup"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def hold(lock: Path, seconds: float, released: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), str(seconds),
                               str(released)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    return holder


def test_apt_step_waits_for_a_held_dpkg_lock(tmp_path: Path, stubs: Path) -> None:
    lock, released = tmp_path / "lock-frontend", tmp_path / "released"
    holder = hold(lock, 3, released)
    try:
        done = apt_setup(stubs, lock, 60)
    finally:
        holder.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    waiting = [line for line in done.stdout.splitlines() if "waiting for the dpkg lock" in line]
    assert len(waiting) == 1 and f"held by {holder.pid} (" in waiting[0], done.stdout
    calls = (tmp_path / "apt-get.log").read_text().splitlines()
    assert [c.split()[3] for c in calls] == ["update", "install"], calls
    assert all("-o DPkg::Lock::Timeout=60" in c for c in calls), calls
    release = float(released.read_text())
    assert all(float(c.split()[0]) >= release for c in calls), (release, calls)


def test_apt_step_gives_up_with_one_line(tmp_path: Path, stubs: Path) -> None:
    lock, released = tmp_path / "lock-frontend", tmp_path / "released"
    holder = hold(lock, 8, released)
    try:
        started = time.monotonic()
        done = apt_setup(stubs, lock, 2)
        took = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert done.returncode != 0 and took < 8
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 1 and "still held by" in errors[0] and str(holder.pid) in errors[0]
    assert not (tmp_path / "apt-get.log").exists()


def test_apt_step_runs_at_once_when_nothing_holds_the_lock(tmp_path: Path,
                                                            stubs: Path) -> None:
    done = apt_setup(stubs, tmp_path / "lock-frontend", 60)
    assert done.returncode == 0 and "waiting" not in done.stdout, done.stdout + done.stderr
    assert len((tmp_path / "apt-get.log").read_text().splitlines()) == 2
