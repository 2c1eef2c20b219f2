"""`inart run`'s front door without a network: bad input exits 2 naming the field; `--check`
probes every host and names each problem (here: namespaces that do not exist)."""

from __future__ import annotations

import subprocess
import sys

import yaml

from control_plane.repo import REPO, child_env


def inart_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", "run", *args], cwd=REPO,
                          env=child_env(), capture_output=True, text=True, timeout=120)


def inventory(tmp_path, **changes) -> str:
    doc = {"schema": "inart.inventory/1", "topology": "fig1", "launcher": "netns",
           "hosts": {h: {"role": "ps" if h.startswith("s") else "worker", "interface": "eth0",
                         "netns": f"inart-missing-{h}"}
                     for h in ["w1", "w2", "w3", "w4", "w5", "w6", "s1", "s2"]},
           "switches": {"v1": {"address": "127.0.0.1:1"}, "v2": {"address": "127.0.0.1:2"}}}
    doc.update(changes)
    path = tmp_path / "hosts.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_bad_inventory_exits_2_naming_the_field(tmp_path):
    proc = inart_run("--inventory", inventory(tmp_path, launcher="telnet"), "--check")
    assert proc.returncode == 2
    assert "launcher: 'telnet': expected one of ssh, netns" in proc.stderr


def test_plan_of_another_topology_is_refused(tmp_path):
    plan = tmp_path / "plan.json"
    made = subprocess.run([sys.executable, "-m", "control_plane.cli", "plan", "-t", "fattree:4",
                           "-s", "atp", "--json", str(plan)], cwd=REPO, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    proc = inart_run("--inventory", inventory(tmp_path), "--plan", str(plan))
    assert proc.returncode == 2 and "not a plan of the inventory's topology" in proc.stderr


def test_check_names_every_unreachable_host(tmp_path):
    proc = inart_run("--inventory", inventory(tmp_path), "--check")
    assert proc.returncode == 1, proc.stderr
    for h in ["w1", "w6", "s2"]:
        assert f"host '{h}' (netns inart-missing-{h}): running " in proc.stderr
