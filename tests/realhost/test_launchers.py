"""Launcher failure handling without a network: the SSH launcher's command lines run through
a fake ``ssh`` (test-only: it runs the remote line with sh on this machine), so the pid-file
stop, the file moves and the host check's error messages are exercised for real processes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from control_plane.deploy.addressing import assign
from control_plane.model.topologies import fig1
from control_plane.repo import REPO
from host_stack.remote.hosts import HostSpec, SshSpec
from host_stack.remote.launchers import Fleet, LaunchError, SshLauncher
from realhosts.checks import HostCheckError, check_hosts
from realhosts.inventory import Inventory, SwitchSpec

FAKE_SSH = """#!/bin/sh
# test-only ssh: drop the options, run the remote line here (exit 255 for host 'down')
while [ $# -gt 0 ]; do
  case "$1" in
    -o|-p|-i) shift 2;;
    -T) shift;;
    --) shift; break;;
    *) dest="$1"; shift;;
  esac
done
case "$dest" in
  *@down) echo "ssh: connect to host down port 22: No route to host" >&2; exit 255;;
esac
exec sh -c "$1"
"""


@pytest.fixture
def fake_ssh(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ssh = bin_dir / "ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(ssh.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


def ssh_host(name: str, address: str = "box", interface: str = "lo") -> HostSpec:
    return HostSpec(name, "worker", interface, "ssh", sys.executable, str(REPO),
                    SshSpec(address, "me"))


def alive(pid: int) -> bool:
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return ") Z " not in stat_line


def test_stop_kills_the_remote_process_not_only_the_client(fake_ssh, tmp_path):
    launcher = SshLauncher(ssh_host("w1"), tmp_path)
    proc = launcher.popen([sys.executable, "-c", "import time; time.sleep(60)"])
    pidfile = launcher.pid_dir / "0.pid"
    deadline = time.monotonic() + 10
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    remote_pid = int(pidfile.read_text())
    assert alive(remote_pid)
    launcher.stop()
    assert not alive(remote_pid) and proc.poll() is not None
    assert not launcher.pid_dir.exists()


def test_terminate_reaches_the_remote_process(fake_ssh, tmp_path):
    """What run_hosts does to stop a PS: SIGTERM must reach it (it writes its counters)."""
    launcher = SshLauncher(ssh_host("s1"), tmp_path)
    out = tmp_path / "got-term"
    code = ("import signal, sys, time, pathlib\n"
            f"signal.signal(signal.SIGTERM, lambda *a: (pathlib.Path({str(out)!r}).touch(), "
            "sys.exit(0)))\n"
            "print('up', flush=True)\ntime.sleep(60)\n")
    proc = launcher.popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "up"
    proc.terminate()
    assert proc.wait(timeout=20) == 0 and out.exists()
    launcher.stop()


def test_files_move_over_ssh(fake_ssh, tmp_path):
    launcher = SshLauncher(ssh_host("w1"), tmp_path / "run")
    src = tmp_path / "plan.json"
    src.write_text("{}")
    launcher.share(["w1"], [src])  # same path: the fake host is this machine
    assert src.read_text() == "{}"
    launcher.touch(["w1"], tmp_path / "start")
    assert (tmp_path / "start").exists()
    launcher.fetch("w1", tmp_path / "missing.json")  # absent: left absent, no error
    assert not (tmp_path / "missing.json").exists()
    bad = SshLauncher(ssh_host("w2", address="down"), tmp_path)
    with pytest.raises(LaunchError, match=r"host 'w2' \(me@down\): creating .* failed: "
                                          r"ssh: connect to host down"):
        bad.touch(["w2"], tmp_path / "x")


def test_host_check_names_every_problem(fake_ssh, tmp_path):
    topo = fig1()
    hosts = {h: ssh_host(h, interface="lo") for h in topo.workers + topo.pss}
    hosts["w2"] = ssh_host("w2", address="down")
    hosts["w3"] = ssh_host("w3", interface="nosuchif0")
    hosts["w4"] = HostSpec("w4", "worker", "lo", "ssh", "/nonexistent/python", str(REPO),
                           SshSpec("box", "me"))
    inv = Inventory(tmp_path / "i.yaml", topo, hosts,
                    {sw: SwitchSpec(sw, "p4runtime", "embedded", "127.0.0.1:1")
                     for sw in topo.switches}, "fig1")
    with pytest.raises(HostCheckError) as err:
        check_hosts(Fleet(hosts, tmp_path), inv, assign(topo))
    text = str(err.value)
    assert "host 'w2' (me@down): not reachable over SSH: ssh: connect to host down" in text
    assert "host 'w3' (me@box): interface 'nosuchif0' does not exist" in text
    assert "host 'w4' (me@box): running /nonexistent/python" in text
    # lo exists but has 127.0.0.1, not the deploy layer's address
    assert "host 'w1' (me@box): interface 'lo' has IPv4 127.0.0.1; expected 10.1.0.2" in text


def test_fleet_stop_reaches_every_host_even_when_one_is_gone(fake_ssh, tmp_path):
    hosts = {"w1": ssh_host("w1"), "w2": ssh_host("w2", address="down")}
    fleet = Fleet(hosts, tmp_path)
    proc = fleet.popen("w1", [sys.executable, "-c", "import time; time.sleep(60)"])
    dead = fleet.popen("w2", [sys.executable, "-c", "pass"])
    assert dead.wait(timeout=10) == 255  # run_hosts reports this host as failed
    deadline = time.monotonic() + 10
    while not (fleet["w1"].pid_dir / "0.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    remote_pid = int((fleet["w1"].pid_dir / "0.pid").read_text())
    fleet.stop()
    assert not alive(remote_pid) and proc.poll() is not None
