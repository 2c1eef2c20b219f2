"""The PTF suite's client calls over BF Runtime (control_plane/drivers/bfrt/tables.py), against
the fake bf_switchd: the program push, the ports, entries and groups as the PTF tests write
them, decoded field by field with the committed bfrt.json; counters read back by index."""

from __future__ import annotations

from control_plane.drivers.bfrt.install import BfrtSwitch
from control_plane.drivers.bfrt.tables import open_tables
from control_plane.drivers.tofino.ports import parse_ports
from tests.drivers.bfrt_fake import PB2, PORT_ID, STUBS, FakeBfRuntime
from tests.drivers.test_bfrt_driver import BFRT, FILES, FIXED, FRONT_DEV, decode

PORTS = parse_ports({"schema": "inart.ports/1", "ports": [
    {"port": 1, "front": "1/0", "speed": "100G"},
    *({"port": k, "dev_port": 8 * k, "speed": "25G", "iface": f"veth{k}"}
      for k in range(2, 11))]}, "ptf-ports.yaml")


def test_ptf_calls_write_what_bfrt_json_says():
    with FakeBfRuntime({"1/0": FRONT_DEV}) as fake:
        tables, dev_ports = open_tables(BfrtSwitch("ptf", fake.address, PORTS), FILES,
                                        stubs=STUBS, timeout=5)
        try:
            assert dev_ports == {1: FRONT_DEV, **{k: 8 * k for k in range(2, 11)}}
            (push,) = fake.of(PB2.SetForwardingPipelineConfigRequest)
            assert push.config[0].bfruntime_info == FILES.bfrt_json.read_bytes()
            ports_up = {int.from_bytes(te.key.fields[0].exact.value, "big")
                        for te in fake.entries.values() if te.table_id == PORT_ID}
            assert ports_up == set(dev_ports.values())
            tables.insert_table_entry("InaIngress.route_dst", {"dst_addr": "10.0.0.2/32"},
                                      "InaIngress.set_next_hop",
                                      {"port": 16, "dst_mac": "00:00:0a:00:00:02",
                                       "src_mac": "02:00:00:00:00:01"})
            tables.insert_multicast_group(5, [(16, 101), (24, 102)])
            p4 = [te for te in fake.entries.values() if te.table_id not in FIXED]
            assert [decode(te) for te in p4] == [(
                "pipe.InaIngress.route_dst", {"dst_addr": (0x0A000002, 32)},
                "InaIngress.set_next_hop",
                {"port": 16, "dst_mac": 0x00000A000002, "src_mac": 0x020000000001})]
            mgid = next(te for te in fake.entries.values()
                        if FIXED.get(te.table_id, {}).get("name") == "$pre.mgid")
            assert list(mgid.data.fields[0].int_arr_val.val) == [101, 102]
        finally:
            tables.close()


def test_counters_are_read_from_the_hardware():
    """bf_switchd answers a counter read from its software state unless the read asks
    ``from_hw`` (the fake keeps the hardware's cells apart and syncs only then): the packets
    a test just sent must show."""
    table = next(t for t in BFRT["tables"] if t["name"] == "pipe.InaIngress.events")
    with FakeBfRuntime({"1/0": FRONT_DEV}) as fake:
        tables, _ = open_tables(BfrtSwitch("ptf", fake.address, PORTS), FILES, stubs=STUBS,
                                timeout=5)
        try:
            fake.counters.update({(table["id"], 7): (3, 300), (table["id"], 13): (1, 100)})
            cells = tables.read_counters("InaIngress.events")
            assert len(cells) == table["size"]
            assert {i: (c.packets, c.bytes) for i, c in cells.items() if c.packets} == \
                {7: (3, 300), 13: (1, 100)}
            assert tables.read_counter("InaIngress.events", 5).packets == 0
            fake.counters[(table["id"], 7)] = (4, 400)
            assert tables.read_counter("InaIngress.events", 7).packets == 4
            (read, *_) = [r for r in fake.of(PB2.ReadRequest)
                          if r.entities[0].table_entry.table_id == table["id"]]
            assert read.entities[0].table_entry.table_flags.from_hw
        finally:
            tables.close()
