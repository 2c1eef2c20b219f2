"""`inart run`'s front door without a network: bad input exits 2 naming the field; `--check`
probes every host and names each problem (here: namespaces that do not exist)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from control_plane.deploy.pipeline import TNA_BUILD
from control_plane.p4build.sources import BuildError, load_build_info
from control_plane.repo import REPO, child_env
from host_stack.ina import wire
from realhosts.cli.run import values_per_packet


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


def test_tofino_hosts_take_n_from_the_tna_build(tmp_path):
    """N against Tofino switches is the TNA build's recorded N, not a number kept in the CLI."""
    assert values_per_packet("bmv2") == wire.DEFAULT_N
    assert values_per_packet("tofino") == load_build_info(TNA_BUILD)["N"]
    (tmp_path / "build-info.json").write_text(json.dumps({"N": 64}))
    assert values_per_packet("tofino", tmp_path) == 64
    with pytest.raises(BuildError, match="build-info.json is missing"):
        values_per_packet("tofino", tmp_path / "none")
