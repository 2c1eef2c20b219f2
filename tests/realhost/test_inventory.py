"""Inventory validation: a good file parses; every bad field is named with what was expected."""

from __future__ import annotations

import copy
import sys

import pytest
import yaml

from control_plane.repo import REPO
from realhosts.inventory import InventoryError, load, parse

GOOD = {
    "schema": "inart.inventory/1",
    "topology": "fig1",
    "ssh": {"user": "ops", "key": "~/.ssh/id", "options": ["UserKnownHostsFile=/dev/null"]},
    "python": "/opt/inart/.venv/bin/python",
    "repo": "/opt/inart",
    "hosts": {**{f"w{i}": {"role": "worker", "interface": "enp1s0", "address": f"192.0.2.{i}"}
                 for i in range(1, 7)},
              "s1": {"role": "ps", "interface": "eth0", "launcher": "netns", "netns": "n-s1"},
              "s2": {"role": "ps", "interface": "eth0", "address": "192.0.2.20", "port": 2222,
                     "user": "root"}},
    "switches": {"v1": {"address": "192.0.2.100:9559", "target": "bmv2"},
                 "v2": {"address": "192.0.2.101:9559", "target": "bmv2", "device_id": 7}},
}


def test_good_inventory(tmp_path):
    path = tmp_path / "hosts.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    inv = load(path)
    assert inv.topology.name == "fig1" and inv.driver == "p4runtime" and inv.target == "bmv2"
    w1, s1, s2 = inv.hosts["w1"], inv.hosts["s1"], inv.hosts["s2"]
    assert (w1.launcher, w1.ssh.user, w1.ssh.port, w1.python, w1.repo) == \
        ("ssh", "ops", 22, "/opt/inart/.venv/bin/python", "/opt/inart")
    assert w1.ssh.options == ("UserKnownHostsFile=/dev/null",)
    assert (s2.ssh.user, s2.ssh.port) == ("root", 2222)
    assert s1.launcher == "netns" and s1.netns == "n-s1" and s1.ssh is None
    assert inv.switches["v2"].device_id == 7 and inv.switches["v1"].device_id is None


def test_netns_host_defaults_to_this_interpreter():
    doc = copy.deepcopy(GOOD)
    del doc["python"], doc["repo"]
    inv = parse(REPO / "x.yaml", doc)
    assert inv.hosts["s1"].python == sys.executable and inv.hosts["w1"].python == "python3"
    assert inv.hosts["w1"].repo == str(REPO)


def test_the_example_file_is_valid():
    inv = load(REPO / "examples" / "inventory.yaml")
    assert set(inv.hosts) == set(inv.topology.workers + inv.topology.pss)


def _bad(mutate) -> str:
    doc = copy.deepcopy(GOOD)
    mutate(doc)
    with pytest.raises(InventoryError) as err:
        parse(REPO / "hosts.yaml", doc)
    return str(err.value)


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d.update(schema="x"), "schema: 'x': expected inart.inventory/1"),
    (lambda d: d.pop("topology"), "topology: missing"),
    (lambda d: d.update(topology="nope:3"), "topology:"),
    (lambda d: d.update(extra=1), "extra: unknown field"),
    (lambda d: d["hosts"]["w1"].update(role="ps"),
     "hosts.w1.role: 'ps': the topology fig1 has 'w1' as a worker"),
    (lambda d: d["hosts"]["w1"].update(role="boss"), "hosts.w1.role: 'boss': expected one of"),
    (lambda d: d["hosts"]["w1"].pop("interface"), "hosts.w1.interface: missing"),
    (lambda d: d["hosts"]["w1"].update(interface="a" * 16), "hosts.w1.interface"),
    (lambda d: d["hosts"]["w1"].pop("address"), "hosts.w1.address: missing"),
    (lambda d: d["hosts"]["w1"].update(port=0), "hosts.w1.port: 0: expected an integer"),
    (lambda d: d["hosts"]["w1"].update(netns="x"), "hosts.w1.netns: only with launcher: netns"),
    (lambda d: d["hosts"]["s1"].update(address="x"),
     "hosts.s1.address: only with launcher: ssh"),
    (lambda d: d["hosts"]["s1"].pop("netns"), "hosts.s1.netns: missing"),
    (lambda d: d["hosts"]["w1"].update(launcher="rsh"), "hosts.w1.launcher: 'rsh'"),
    (lambda d: d["hosts"].pop("w6"), "hosts: no entry for w6"),
    (lambda d: d["hosts"].update(w9={"role": "worker", "interface": "e", "address": "a"}),
     "hosts.w9: the topology fig1 has no worker or PS 'w9'"),
    (lambda d: d["hosts"]["w2"].update(address="192.0.2.1"),
     "hosts.w2.interface: 'enp1s0' on the same machine as host 'w1'"),
    (lambda d: d["switches"].pop("v2"), "switches: no entry for v2"),
    (lambda d: d["switches"]["v1"].update(address="nohostport"),
     "switches.v1.address: 'nohostport': expected HOST:PORT"),
    (lambda d: d["switches"]["v1"].update(driver="bfrt"), "switches.v1.target: 'bmv2'"),
    (lambda d: d["switches"]["v1"].update(target="tofino"), "switches.v1.ports: missing"),
    (lambda d: d["switches"]["v1"].update(ports="p.yaml"), "switches.v1.ports: only for"),
    (lambda d: d["switches"]["v1"].update(target="embedded"), "switches: mixed drivers"),
    (lambda d: d["switches"].update(v9={"address": "a:1"}), "switches.v9: the topology"),
    (lambda d: d["ssh"].update(options=["nokey"]), "ssh.options"),
    (lambda d: d.update(hosts=[]), "hosts: expected a non-empty mapping"),
])
def test_bad_field_is_named(mutate, expected):
    message = _bad(mutate)
    assert "inventory " in message and expected in message, message


def test_unreadable_and_not_yaml(tmp_path):
    with pytest.raises(InventoryError, match="cannot read it"):
        load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("hosts: [unclosed")
    with pytest.raises(InventoryError, match=r"not valid YAML \(line \d+, column \d+: "):
        load(bad)
