"""The Tofino ports file and the plan-port -> dev-port rewrite of compiled entries."""

from __future__ import annotations

import pytest

from control_plane.deploy.entries import EntriesError
from control_plane.deploy.portmap import remap_compiled, remap_ports
from control_plane.drivers.tofino.ports import PortsError, load_ports, parse_ports

GOOD = {"schema": "inart.ports/1", "ports": [
    {"port": 1, "front": "1/0", "speed": "100G", "fec": "rs"},
    {"port": 2, "dev_port": 136, "speed": "25G", "autoneg": "off", "iface": "veth3"},
]}


def test_good_file(tmp_path):
    path = tmp_path / "ports.yaml"
    path.write_text("schema: inart.ports/1\nports:\n"
                    "  - {port: 1, front: 1/0, speed: 100G, fec: rs}\n"
                    "  - {port: 2, dev_port: 136, speed: 25G, autoneg: 'off', iface: veth3}\n")
    spec = load_ports(path)
    assert spec.ports[1].front == "1/0" and spec.ports[1].fec == "rs"
    assert spec.ports[1].autoneg == "default" and spec.ports[2].fec == "none"
    assert spec.ports[2].iface == "veth3"
    assert spec.dev_ports({"1/0": 128}) == {1: 128, 2: 136}
    with pytest.raises(PortsError, match=r"port 1 \(1/0\): its dev port is not known"):
        spec.dev_ports()


@pytest.mark.parametrize("change, match", [
    ({"schema": "x"}, r"schema 'x': expected 'inart.ports/1'"),
    ({"ports": []}, r"'ports' must be a non-empty list"),
    ({"ports": [{"front": "1/0", "speed": "100G"}]}, r"ports\[0\]: 'port' missing"),
    ({"ports": [{"port": 1, "speed": "100G"}]}, r"ports\[0\]: give 'front'"),
    ({"ports": [{"port": 1, "front": "1-0", "speed": "100G"}]}, r"ports\[0\]: front '1-0'"),
    ({"ports": [{"port": 1, "front": "1/0", "speed": "3G"}]},
     r"ports\[0\]: speed '3G': expected one of 1G"),
    ({"ports": [{"port": 1, "front": "1/0"}]}, r"ports\[0\]: 'speed' missing"),
    ({"ports": [{"port": 1, "dev_port": 512, "speed": "10G"}]},
     r"ports\[0\]: dev_port 512: expected an integer 0..511"),
    ({"ports": [{"port": 1, "front": "1/0", "speed": "10G", "fec": "xx"}]},
     r"ports\[0\]: fec 'xx'"),
    ({"ports": [{"port": 1, "front": "1/0", "speed": "10G", "sped": 1}]},
     r"ports\[0\]: unknown field\(s\) sped"),
    ({"ports": [{"port": 1, "front": "1/0", "speed": "10G"},
                {"port": 1, "front": "2/0", "speed": "10G"}]}, r"ports\[1\]: port 1 is given"),
    ({"ports": [{"port": 1, "front": "1/0", "speed": "10G"},
                {"port": 2, "front": "1/0", "speed": "10G"}]},
     r"ports\[1\]: front 1/0 is already plan port 1"),
])
def test_bad_files_name_the_field(change, match):
    with pytest.raises(PortsError, match=match):
        parse_ports({**GOOD, **change}, "p.yaml")


def test_unreadable_and_not_yaml(tmp_path):
    with pytest.raises(PortsError, match="cannot read"):
        load_ports(tmp_path / "none.yaml")
    (tmp_path / "bad.yaml").write_text("ports: [\n")
    with pytest.raises(PortsError, match=r"not valid YAML \(line \d+, column \d+: "):
        load_ports(tmp_path / "bad.yaml")


def test_remap_rewrites_ports_and_replicas_only(fig1_compiled):
    v1 = fig1_compiled.switches["v1"]
    ports = {e_port for e in v1.entries for k, e_port in e.params if k == "port"}
    mapping = {p: 100 + p for p in range(1, 10)}
    out = remap_ports(v1, mapping)
    assert {v for e in out.entries for k, v in e.params if k == "port"} == {
        100 + p for p in ports}
    for a, b in zip(v1.entries, out.entries, strict=True):
        assert (a.table, a.match, a.action) == (b.table, b.match, b.action)
        assert [kv for kv in a.params if kv[0] != "port"] == [
            kv for kv in b.params if kv[0] != "port"]
    for a, b in zip(v1.groups, out.groups, strict=True):
        assert [(100 + p, r) for p, r in a.replicas] == list(b.replicas)
    with pytest.raises(EntriesError, match=r"plan port \d has no entry in the ports file"):
        remap_ports(v1, {})
    with pytest.raises(EntriesError, match="no ports file for switch"):
        remap_compiled(fig1_compiled, {"v1": mapping})
