"""`inart run`'s install on Tofino switches of an inventory: bf_switchd (the BF Runtime
driver, checked against the fake bf_switchd field by field by bfrt.json) and Stratum (the
deploy layer's P4Runtime install with dev ports from the ports files, against a fake
Stratum, decoded by the TNA P4Info); no event counters are read from either."""

from __future__ import annotations

import yaml

from control_plane.deploy.addressing import assign
from control_plane.deploy.entries import compile_plan
from control_plane.deploy.portmap import remap_ports
from control_plane.drivers.tofino.stratum import unpack
from control_plane.model.topologies import fig1
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from control_plane.solver.solve import plan_for
from realhosts.install import event_reader, install_plan
from realhosts.inventory import load
from tests.drivers.bfrt_fake import STUBS, FakeBfRuntime
from tests.drivers.p4rt_fake import FakeStratum
from tests.drivers.test_bfrt_driver import FIXED, decode, expected
from tests.drivers.test_stratum_driver import decode as stratum_decode
from tests.drivers.test_stratum_driver import expected as stratum_expected

TOPO = fig1()
ADDR = assign(TOPO)


def ports_count(sw: str) -> int:
    return sum(1 for (s, _) in ADDR.port if s == sw)


def tofino_inventory(tmp_path, driver: str, addresses: dict[str, str]):
    """An inventory of fig1 with Tofino switches at ``addresses``, dev port = 4 x plan port."""
    switches = {}
    for sw, address in addresses.items():
        ports = tmp_path / f"ports-{sw}.yaml"
        ports.write_text(yaml.safe_dump({"schema": "inart.ports/1", "ports": [
            {"port": k, "dev_port": 4 * k, "speed": "100G"}
            for k in range(1, ports_count(sw) + 1)]}))
        switches[sw] = {"driver": driver, "target": "tofino", "address": address,
                        "ports": ports.name}
    doc = {"schema": "inart.inventory/1", "topology": "fig1", "switches": switches,
           "hosts": {h: {"role": TOPO.nodes[h].kind, "interface": "eth0",
                         "launcher": "netns", "netns": f"n-{h}"}
                     for h in TOPO.workers + TOPO.pss}}
    path = tmp_path / "hosts.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load(path)


def test_bfrt_switches_of_an_inventory(tmp_path):
    topo, addr = TOPO, ADDR
    compiled = compile_plan(plan_for(topo, "inart", 0), addr)
    with FakeBfRuntime() as f1, FakeBfRuntime() as f2:
        fakes = {"v1": f1, "v2": f2}
        inventory = tofino_inventory(tmp_path, "bfrt", {sw: f.address for sw, f in fakes.items()})
        summary = install_plan(inventory, compiled, addr, timeout=5, stubs=STUBS)
        assert summary.startswith("BF Runtime: ")
        for sw, fake in fakes.items():
            mapping = {k: 4 * k for k in range(1, 1 + ports_count(sw))}
            want = remap_ports(compiled.switches[sw], mapping)
            got = [decode(te) for te in fake.entries.values() if te.table_id not in FIXED]
            assert sorted(map(repr, got)) == sorted(map(repr, expected(want)))
        assert event_reader(inventory, addr, {"aggregated_out": 7}) is None


def test_stratum_switches_of_an_inventory(tmp_path):
    compiled = compile_plan(plan_for(TOPO, "inart", 0), ADDR)
    with FakeStratum() as s1, FakeStratum() as s2:
        fakes = {"v1": s1, "v2": s2}
        inventory = tofino_inventory(tmp_path, "p4runtime",
                                     {sw: f.address for sw, f in fakes.items()})
        assert install_plan(inventory, compiled, ADDR, timeout=5).startswith("P4Runtime: ")
        for sw, fake in fakes.items():
            (push,) = fake.of(p4runtime_pb2.SetForwardingPipelineConfigRequest)
            assert unpack(push.config.p4_device_config).p4_name == "inart"
            want = remap_ports(compiled.switches[sw],
                               {k: 4 * k for k in range(1, 1 + ports_count(sw))})
            updates = [u for w in fake.of(p4runtime_pb2.WriteRequest) for u in w.updates]
            got = [stratum_decode(u.entity.table_entry) for u in updates
                   if u.entity.HasField("table_entry")]
            assert sorted(map(repr, got)) == sorted(map(repr, stratum_expected(want)))
        assert event_reader(inventory, ADDR, {"aggregated_out": 7}) is None
