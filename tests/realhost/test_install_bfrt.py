"""`inart run` with bf_switchd switches: the inventory's ports files and addresses reach the
BF Runtime driver, which installs the plan (checked against the fake bf_switchd, field by
field by bfrt.json); no event counters are read from them."""

from __future__ import annotations

import yaml

from control_plane.deploy.addressing import assign
from control_plane.deploy.entries import compile_plan
from control_plane.deploy.portmap import remap_ports
from control_plane.solve import plan_for
from control_plane.topologies import fig1
from realhosts.install import event_reader, install_plan
from realhosts.inventory import load
from tests.drivers.bfrt_fake import STUBS, FakeBfRuntime
from tests.drivers.test_bfrt_driver import FIXED, decode, expected


def test_bfrt_switches_of_an_inventory(tmp_path):
    topo = fig1()
    addr = assign(topo)
    compiled = compile_plan(plan_for(topo, "inart", 0), addr)
    with FakeBfRuntime() as f1, FakeBfRuntime() as f2:
        fakes = {"v1": f1, "v2": f2}
        switches = {}
        for sw, fake in fakes.items():
            count = sum(1 for (s, _) in addr.port if s == sw)
            ports = tmp_path / f"ports-{sw}.yaml"
            ports.write_text(yaml.safe_dump({"schema": "inart.ports/1", "ports": [
                {"port": k, "dev_port": 4 * k, "speed": "100G"} for k in range(1, count + 1)]}))
            switches[sw] = {"driver": "bfrt", "target": "tofino", "address": fake.address,
                            "ports": ports.name}
        doc = {"schema": "inart.inventory/1", "topology": "fig1", "switches": switches,
               "hosts": {h: {"role": topo.nodes[h].kind, "interface": "eth0",
                             "launcher": "netns", "netns": f"n-{h}"}
                         for h in topo.workers + topo.pss}}
        path = tmp_path / "hosts.yaml"
        path.write_text(yaml.safe_dump(doc))
        inventory = load(path)
        summary = install_plan(inventory, compiled, addr, timeout=5, stubs=STUBS)
        assert summary.startswith("BF Runtime: ")
        for sw, fake in fakes.items():
            mapping = {k: 4 * k for k in range(1, 1 + sum(1 for (s, _) in addr.port if s == sw))}
            want = remap_ports(compiled.switches[sw], mapping)
            got = [decode(te) for te in fake.entries.values() if te.table_id not in FIXED]
            assert sorted(map(repr, got)) == sorted(map(repr, expected(want)))
        assert event_reader(inventory, addr, {"aggregated_out": 7}) is None
