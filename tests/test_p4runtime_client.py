"""P4Runtime client: values, names and entry/update building against the committed P4Info.

Talking to a real server is covered by the PTF suite (tests/ptf, run by test_ptf.py) and the
embedded target's service tests (tests/embedded/test_p4runtime_server.py: arbitration, default
actions, multicast/clone sessions, registers, counters, per-update errors).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from control_plane.drivers.p4runtime import (
    P4Info,
    P4RuntimeClient,
    P4RuntimeError,
    build_default_entry,
    build_table_entry,
    clone_session_update,
    encode_update,
    encode_value,
    encode_write_request,
    multicast_group_update,
    table_update,
)
from control_plane.p4build import v1model
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2

TABLES_P4INFO = Path(__file__).resolve().parent / "embedded" / "p4" / "build" / "tables.p4info.txt"


@pytest.fixture(scope="module")
def p4info() -> P4Info:
    return P4Info.from_file(v1model.artifact_paths()[1])


@pytest.mark.parametrize("value,width,expected", [
    (0, 9, b"\x00"), (5, 9, b"\x05"), (511, 9, b"\x01\xff"),
    ("10.0.0.1", 32, b"\x0a\x00\x00\x01"), ("0.0.0.9", 32, b"\x09"),
    ("00:00:0a:00:00:01", 48, b"\x0a\x00\x00\x01"), (b"\x00\x07", 16, b"\x07"),
])
def test_canonical_encoding(value, width, expected):
    assert encode_value(value, width, "f") == expected


@pytest.mark.parametrize("value,width,match", [
    (512, 9, "does not fit in 9 bits"), (-1, 8, "does not fit"), ("10.0.0", 32, "cannot parse"),
    (True, 8, "bool"), (1.5, 8, "expected int"),
])
def test_bad_values_name_the_field(value, width, match):
    with pytest.raises(P4RuntimeError, match=f"myfield.*{match}|{match}"):
        encode_value(value, width, "myfield")


def test_route_entry(p4info):
    e = build_table_entry(p4info, "InaIngress.route_dst", {"dst_addr": "10.0.0.77/24"},
                          "InaIngress.set_next_hop",
                          {"port": 3, "dst_mac": "00:00:0a:00:00:01", "src_mac": 2})
    assert e.table_id == p4info.table("InaIngress.route_dst").preamble.id
    assert e.match[0].lpm.value == bytes([10, 0, 0, 0]) and e.match[0].lpm.prefix_len == 24
    assert [p.value for p in e.action.action.params] == [b"\x03", b"\x0a\x00\x00\x01", b"\x02"]


def test_aggregate_entry(p4info):
    e = build_table_entry(
        p4info, "InaIngress.ina_aggregate", {"job": 1, "ps_addr": "10.0.1.1",
                                          "worker_addr": "10.0.0.1"},
        "InaIngress.aggregate",
        {"pool_base": 0, "pool_size": 64, "fan_in": 2, "rank": 0, "agg_addr": "10.0.100.1"})
    assert len(e.match) == 3 and len(e.action.action.params) == 5


@pytest.mark.parametrize("kwargs,match", [
    (dict(table_name="InaIngress.nope", match={}), "unknown table 'InaIngress.nope'.*route_dst"),
    (dict(table_name="InaIngress.route_pair", match={"src_addr": 1}),
     "route_pair.*dst_addr missing"),
    (dict(table_name="InaIngress.route_dst", match={"dst": "10.0.0.1/32"}),
     "no match field 'dst'.*dst_addr"),
    (dict(table_name="InaIngress.route_dst", match={"dst_addr": "10.0.0.1/33"}),
     "dst_addr.*prefix length 33"),
    (dict(table_name="InaIngress.route_dst", match={"dst_addr": "10.0.0.1/32"},
          action_name="InaIngress.aggregate", params={}),
     "cannot use action 'InaIngress.aggregate'"),
    (dict(table_name="InaIngress.route_dst", match={"dst_addr": "10.0.0.1/32"},
          action_name="InaIngress.drop_no_route", params={}), "cannot use action"),
    (dict(table_name="InaIngress.route_dst", match={"dst_addr": "10.0.0.1/32"},
          action_name="InaIngress.set_next_hop", params={"port": 1, "dst_mac": 2}),
     "src_mac missing"),
    (dict(table_name="InaIngress.route_dst", match={"dst_addr": "10.0.0.1/32"},
          action_name="InaIngress.set_next_hop",
          params={"port": 600, "dst_mac": 2, "src_mac": 3}),
     r"route_dst/InaIngress.set_next_hop.port.*9 bits"),
])
def test_bad_names_and_values_are_reported(p4info, kwargs, match):
    with pytest.raises(P4RuntimeError, match=match):
        build_table_entry(p4info, **kwargs)


def test_unknown_counter_lists_known(p4info):
    with pytest.raises(P4RuntimeError, match="unknown counter 'x'.*InaIngress.events"):
        p4info.counter("x")


def test_connect_times_out_with_a_clear_error():
    client = P4RuntimeClient("127.0.0.1:1", timeout=0.5)
    with pytest.raises(P4RuntimeError, match="not reachable within"):
        client.connect()
    client.close()


def test_writes_need_a_p4info():
    client = P4RuntimeClient("127.0.0.1:1", timeout=0.5)
    with pytest.raises(P4RuntimeError, match="no P4Info"):
        client.insert_table_entry("InaIngress.route_dst", {"dst_addr": "10.0.0.1/32"},
                                  "InaIngress.set_next_hop", {})
    client.close()


def test_default_entry(p4info):
    e = build_default_entry(p4info, "InaIngress.route_dst", "InaIngress.drop_no_route")
    assert e.is_default_action and not e.match
    assert e.action.action.action_id == p4info.action("InaIngress.drop_no_route").preamble.id
    reset = build_default_entry(p4info, "InaIngress.route_dst")
    assert reset.is_default_action and not reset.HasField("action")
    with pytest.raises(P4RuntimeError, match="the default action cannot use action "
                                             "'InaIngress.aggregate'"):
        build_default_entry(p4info, "InaIngress.route_dst", "InaIngress.aggregate", {})


def test_range_match():
    info = P4Info.from_file(TABLES_P4INFO)
    e = build_table_entry(info, "MyIngress.t_range", {"hdr.t.b": (100, 0x1234)},
                          "MyIngress.set_range", {"v": 1}, priority=1)
    assert (e.match[0].range.low, e.match[0].range.high) == (b"\x64", b"\x12\x34")
    with pytest.raises(P4RuntimeError, match="hdr.t.b.*low 300 is above high 100"):
        build_table_entry(info, "MyIngress.t_range", {"hdr.t.b": (300, 100)})
    with pytest.raises(P4RuntimeError, match="range match needs"):
        build_table_entry(info, "MyIngress.t_range", {"hdr.t.b": 5})


def test_update_builders(p4info):
    entry = build_table_entry(p4info, "InaIngress.route_dst", {"dst_addr": "10.0.0.0/8"},
                              "InaIngress.set_next_hop", {"port": 1, "dst_mac": 2, "src_mac": 3})
    u = table_update(entry, p4runtime_pb2.Update.MODIFY)
    assert u.type == p4runtime_pb2.Update.MODIFY and u.entity.table_entry == entry
    g = multicast_group_update(9, [(2, 200), (1, 100)])
    group = g.entity.packet_replication_engine_entry.multicast_group_entry
    assert g.type == p4runtime_pb2.Update.INSERT and group.multicast_group_id == 9
    assert [(r.egress_port, r.instance) for r in group.replicas] == [(2, 200), (1, 100)]
    c = clone_session_update(4, [(3, 1)], p4runtime_pb2.Update.DELETE)
    assert c.entity.packet_replication_engine_entry.clone_session_entry.session_id == 4
    with pytest.raises(P4RuntimeError, match="multicast group id 0: expected 1..65535"):
        multicast_group_update(0, [])
    with pytest.raises(P4RuntimeError, match="clone session id 0"):
        clone_session_update(0, [])


def test_register_lookup(p4info):
    reg = p4info.register("InaIngress.slot_count")
    assert p4info.register_bitwidth(reg) == 16 and reg.size == 4096
    with pytest.raises(P4RuntimeError, match="unknown register 'x'.*InaIngress.slot_count"):
        p4info.register("x")


def test_register_index_checked_before_any_rpc(p4info):
    client = P4RuntimeClient("127.0.0.1:1", timeout=0.5)
    client.use_p4info(p4info)
    with pytest.raises(P4RuntimeError, match="register 'InaIngress.slot_count' index 4096"):
        client.read_register("InaIngress.slot_count", 4096)
    with pytest.raises(P4RuntimeError, match=r"slot_count'\[3\].*does not fit in 16 bits"):
        client.write_register("InaIngress.slot_count", 3, 1 << 16)
    client.close()


def test_encoded_write_request_is_the_built_one(p4info):
    """write_encoded's bytes parse as exactly the request ``write`` would build."""
    entry = build_table_entry(p4info, "InaIngress.route_dst", {"dst_addr": "10.0.0.1/32"},
                              "InaIngress.set_next_hop", {"port": 300, "dst_mac": 2, "src_mac": 3})
    updates = [table_update(entry, p4runtime_pb2.Update.INSERT),
               multicast_group_update(9, [(2, 200)] * 70, p4runtime_pb2.Update.DELETE)]
    election = p4runtime_pb2.Uint128(high=1, low=1 << 40)
    built = p4runtime_pb2.WriteRequest(device_id=1 << 33, election_id=election)
    built.updates.extend(updates)
    encoded = encode_write_request(1 << 33, election, [
        encode_update(u.type, u.entity.SerializeToString()) for u in updates])
    assert p4runtime_pb2.WriteRequest.FromString(encoded) == built
