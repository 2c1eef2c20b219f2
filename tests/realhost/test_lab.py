"""`inart lab up|down` as a user runs them: fig1 as namespace hosts and standalone embedded
switches, `inart run --inventory` on the inventory it wrote (every sum exact), `inart shell`
on one of its switches, and `lab down` leaving no namespace, interface or process, also after
`lab up` was killed half-way.

Run under the network lock: ``flock /tmp/inart-net.lock pytest tests/realhost/test_lab.py``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from control_plane.deploy.pipeline import Pipeline
from control_plane.model.topologies import fig1
from control_plane.repo import REPO, child_env
from realhosts import lab
from realhosts.cli.lab import topology_field

NAME = "itl"  # this test's labs; nothing else uses the prefix


def inart(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", *args], cwd=REPO,
                          env=child_env(), capture_output=True, text=True, timeout=timeout)


def lab_leftovers(name: str) -> list[str]:
    """Every namespace, interface and process named for the lab, each kind sorted by name:
    the kernel lists interfaces in ifindex order, which depends on the machine's history."""
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found = [f"netns {line.split()[0]}" for line in ns.splitlines()
             if line.startswith(name)]
    found += [f"interface {n}" for n in sorted(p.name for p in
                                                Path("/sys/class/net").glob(f"{name}*"))]
    ps = subprocess.run(["ps", "-eww", "-o", "pid,args"], capture_output=True, text=True).stdout
    found += [f"process {line}" for line in ps.splitlines() if f"@{name}" in line]
    return found


@pytest.fixture
def needs_lab():
    reason = lab.unavailable()
    if reason:
        pytest.skip(reason)
    Pipeline().check()
    assert lab_leftovers(NAME) == []
    yield
    lab.down(NAME)


@pytest.mark.root
def test_lab_up_run_down(needs_lab, tmp_path):
    up = inart("lab", "up", "--topology", "fig1", "--name", NAME, "--out", str(tmp_path))
    print(up.stdout, up.stderr)
    assert up.returncode == 0, up.stderr
    inventory = tmp_path / "inventory.yaml"
    assert f"wrote {inventory}" in up.stdout
    doc = yaml.safe_load(inventory.read_text())
    assert sorted(doc["hosts"]) == sorted(fig1().workers + fig1().pss)
    assert doc["hosts"]["w1"] == {"role": "worker", "interface": "eth0", "launcher": "netns",
                                  "netns": f"{NAME}w1"}
    assert "netns itlw1, eth0 10." in up.stdout and "switch v1" in up.stdout
    offload = subprocess.run(["ip", "netns", "exec", f"{NAME}w1", "ethtool", "-k", "eth0"],
                             capture_output=True, text=True).stdout
    assert "tx-checksumming: off" in offload

    again = inart("lab", "up", "--name", NAME, "--out", str(tmp_path / "again"))
    assert again.returncode == 1 and f"lab '{NAME}' is up" in again.stderr

    run = inart("run", "--inventory", str(inventory), "--rounds", "2", "--values",
                str(32 * 300), "--quiet", "--out", str(tmp_path / "run"))
    print(run.stdout, run.stderr[-2000:])
    assert run.returncode == 0, run.stderr
    row = json.loads((tmp_path / "run" / "run.json").read_text())[0]
    assert row["exact"] is True and row["rounds"] == 2 and row["aggregated_out"] > 0

    v1 = doc["switches"]["v1"]
    shell = inart("shell", "--address", v1["address"], "--device-id", str(v1["device_id"]),
                  "-c", "print('entries', len(list(TableEntry('InaIngress.route_dst')"
                        ".read())))")
    assert shell.returncode == 0, shell.stderr
    assert int(shell.stdout.split("entries")[1]) > 0  # the plan `inart run` installed

    down = inart("lab", "down", "--name", NAME)
    assert down.returncode == 0, down.stderr
    assert "stopped 2 switch processes" in down.stdout and "8 namespaces" in down.stdout
    assert lab_leftovers(NAME) == []
    assert not lab.state_file(NAME).exists()
    assert "nothing to remove" in inart("lab", "down", "--name", NAME).stdout


@pytest.mark.root
def test_lab_down_after_up_was_killed(needs_lab, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "control_plane.cli", "lab", "up", "--name",
                             NAME, "--out", str(tmp_path)], cwd=REPO, env=child_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    state = lab.state_file(NAME)
    while time.monotonic() < deadline:  # killed once a switch was started
        try:
            if json.loads(state.read_text())["switches"]:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert lab_leftovers(NAME) != []
    down = inart("lab", "down", "--name", NAME)
    assert down.returncode == 0, down.stderr
    assert lab_leftovers(NAME) == []


@pytest.mark.root
def test_lab_up_refuses_names_it_did_not_make(needs_lab, tmp_path):
    subprocess.run(["ip", "link", "add", f"{NAME}v2p1", "type", "veth", "peer", "name",
                    f"{NAME}x"], check=True)
    try:
        up = inart("lab", "up", "--name", NAME, "--out", str(tmp_path))
        assert up.returncode == 1
        assert f"interface {NAME}v2p1 already exist" in up.stderr and "did not make" in up.stderr
        assert Path(f"/sys/class/net/{NAME}v2p1").exists()  # not taken over, not removed
        assert lab_leftovers(NAME) == [f"interface {NAME}v2p1", f"interface {NAME}x"]
    finally:
        subprocess.run(["ip", "link", "del", f"{NAME}v2p1"], capture_output=True)


def test_lab_names_are_checked():
    with pytest.raises(lab.LabError, match="--name 'Lab-1': expected lower-case"):
        lab.check_names("Lab-1", fig1())
    with pytest.raises(lab.LabError, match="would have 16 characters, Linux allows 15"):
        lab.check_names("abcdefghijkl", fig1())  # abcdefghijklv1p1
    lab.check_names("ilab", fig1())


def test_lab_inventory_topology_field(tmp_path):
    args = type("A", (), {"topology": "fattree:4", "ps": 2, "workers": None, "preset": None,
                          "seed": None})
    assert topology_field(args) == {"spec": "fattree:4", "ps": 2}
    args.ps = None
    assert topology_field(args) == "fattree:4"
