"""The P4Runtime service over a loopback gRPC port: arbitration, pipeline, Write/Read, errors."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from emulation.embedded import p4rt_client as pc
from emulation.embedded.bench import ipv4_udp
from emulation.embedded.p4runtime_server import serve
from emulation.embedded.pipeline import Switch
from tests.embedded.conftest import compiled

U = p4runtime_pb2.Update


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server() -> Iterator[tuple[str, Switch]]:
    switch = Switch()
    address = f"127.0.0.1:{free_port()}"
    srv, _ = serve(switch, 1, address, threading.Lock())
    yield address, switch
    srv.stop(grace=None)


@pytest.fixture
def client(server: tuple[str, Switch]) -> Iterator[pc.Client]:
    c = pc.Client(server[0], device_id=1, election_id=10)
    config, p4info = compiled("forward")
    c.set_pipeline(p4info, config)
    yield c
    c.close()


def write_errors(exc: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    """The per-update p4.v1.Error list of a failed Write (P4Runtime spec section 12)."""
    assert exc.code() == grpc.StatusCode.UNKNOWN
    raw = dict(exc.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(raw)
    errors = []
    for detail in status.details:
        err = p4runtime_pb2.Error()
        assert detail.Unpack(err)
        errors.append(err)
    return errors


def route(c: pc.Client, prefix: int, plen: int, port: int) -> Any:
    return c.table_entry("MyIngress.route", {"hdr.ipv4.dst_addr": (prefix, plen)},
                         "MyIngress.forward", {"port": port, "dmac": 0xA})


def test_arbitration_primary_and_backup(server: tuple[str, Switch]) -> None:
    primary = pc.Client(server[0], device_id=1, election_id=5)
    assert primary.arbitration.arbitration.status.code == code_pb2.OK
    backup = pc.Client(server[0], device_id=1, election_id=3)
    assert backup.arbitration.arbitration.status.code == code_pb2.ALREADY_EXISTS
    config, p4info = compiled("forward")
    with pytest.raises(grpc.RpcError) as err:
        backup.set_pipeline(p4info, config)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    primary.set_pipeline(p4info, config)
    primary.close()  # the backup is told it is now the primary
    msg = backup.responses.get(timeout=5)
    while msg.arbitration.status.code != code_pb2.OK:
        msg = backup.responses.get(timeout=5)
    backup.set_pipeline(p4info, config)
    backup.close()


def test_write_without_pipeline_and_bad_pipeline(server: tuple[str, Switch]) -> None:
    c = pc.Client(server[0], device_id=1, election_id=1)
    config, p4info = compiled("forward")
    c.p4info = p4info
    with pytest.raises(grpc.RpcError) as err:
        c.insert(route(c, 0x0A000000, 8, 2))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    bad = config.replace(b'"mark_to_drop"', b'"execute_meter"')
    with pytest.raises(grpc.RpcError) as err:
        c.set_pipeline(p4info, bad)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "execute_meter" in err.value.details() and "actions[" in err.value.details()
    c.close()


def test_wrong_device_id_is_not_found(server: tuple[str, Switch]) -> None:
    c = pc.Client(server[0], device_id=1, election_id=1)
    req = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=9)
    with pytest.raises(grpc.RpcError) as err:
        c.stub.GetForwardingPipelineConfig(req)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    c.close()


def test_get_pipeline_config_and_capabilities(client: pc.Client) -> None:
    R = p4runtime_pb2.GetForwardingPipelineConfigRequest
    rep = client.stub.GetForwardingPipelineConfig(R(device_id=1, response_type=R.ALL))
    assert rep.config.p4info == client.p4info
    assert rep.config.p4_device_config == compiled("forward")[0]
    rep = client.stub.GetForwardingPipelineConfig(R(device_id=1,
                                                    response_type=R.COOKIE_ONLY))
    assert not rep.config.p4_device_config
    caps = client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
    assert caps.p4runtime_api_version == "1.4.1"


def test_insert_read_modify_delete_and_errors(client: pc.Client, server: Any) -> None:
    switch = server[1]
    client.insert(route(client, 0x0A000000, 8, 2))
    with pytest.raises(grpc.RpcError) as err:
        client.insert(route(client, 0x0A000000, 8, 3))
    assert [e.canonical_code for e in write_errors(err.value)] == [code_pb2.ALREADY_EXISTS]
    frame = ipv4_udp(b"x" * 10, 5000, dst=0x0A010203)
    assert switch.process(1, frame)[0][0] == 2
    client.insert(route(client, 0x0A000000, 8, 5), U.MODIFY)
    assert switch.process(1, frame)[0][0] == 5
    ent = p4runtime_pb2.Entity()
    ent.table_entry.table_id = client.object_id("tables", "MyIngress.route")
    entries = list(client.read(ent))
    assert len(entries) == 1
    te = entries[0].table_entry
    assert te.match[0].lpm.value == b"\x0a\x00\x00\x00" and te.match[0].lpm.prefix_len == 8
    assert te.action.action.params[0].value == b"\x05"  # canonical: no leading zeros
    client.insert(route(client, 0x0A000000, 8, 5), U.DELETE)
    assert switch.process(1, frame) == []
    with pytest.raises(grpc.RpcError) as err:
        client.insert(route(client, 0x0A000000, 8, 5), U.DELETE)
    assert [e.canonical_code for e in write_errors(err.value)] == [code_pb2.NOT_FOUND]


def test_batch_reports_every_update(client: pc.Client) -> None:
    good = pc.table_update(route(client, 0x0B000000, 8, 2))
    dup = pc.table_update(route(client, 0x0B000000, 8, 2))
    bad_bits = pc.table_update(route(client, 0x0C000000, 8, 2))
    bad_bits.entity.table_entry.action.action.params[0].value = b"\x7f\xff"  # > 9 bits
    bad_lpm = pc.table_update(route(client, 0x0D000001, 8, 2))  # bits beyond the prefix
    with pytest.raises(grpc.RpcError) as err:
        client.write(good, dup, bad_bits, bad_lpm)
    codes = [e.canonical_code for e in write_errors(err.value)]
    assert codes == [code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.OUT_OF_RANGE,
                     code_pb2.INVALID_ARGUMENT]


def test_default_action_modify_and_read(client: pc.Client, server: Any) -> None:
    te = client.table_entry("MyIngress.route", {}, "MyIngress.forward",
                            {"port": 7, "dmac": 1}, default=True)
    client.insert(te, U.MODIFY)
    assert server[1].process(1, ipv4_udp(b"", 1, dst=0x01020304))[0][0] == 7
    ent = p4runtime_pb2.Entity()
    ent.table_entry.table_id = te.table_id
    ent.table_entry.is_default_action = True
    (got,) = list(client.read(ent))
    assert got.table_entry.action.action.action_id == client.object_id("actions",
                                                                       "MyIngress.forward")
    with pytest.raises(grpc.RpcError) as err:
        client.insert(te, U.INSERT)
    assert [e.canonical_code for e in write_errors(err.value)] == [code_pb2.INVALID_ARGUMENT]
    reset = p4runtime_pb2.TableEntry(table_id=te.table_id, is_default_action=True)
    client.insert(reset, U.MODIFY)
    assert server[1].process(1, ipv4_udp(b"", 1, dst=0x01020304)) == []


def test_direct_counter_read(client: pc.Client, server: Any) -> None:
    client.insert(route(client, 0x0A000000, 8, 2))
    frame = ipv4_udp(b"x" * 10, 5000, dst=0x0A010203)
    for _ in range(3):
        server[1].process(1, frame)
    ent = p4runtime_pb2.Entity()
    ent.direct_counter_entry.table_entry.table_id = client.object_id("tables", "MyIngress.route")
    (got,) = list(client.read(ent))
    assert got.direct_counter_entry.data.packet_count == 3
    assert got.direct_counter_entry.data.byte_count == 3 * len(frame)


def test_multicast_group_lifecycle(client: pc.Client, server: Any) -> None:
    client.write(pc.multicast_update(7, [(1, 1), (2, 1), (3, 2)]))
    with pytest.raises(grpc.RpcError) as err:
        client.write(pc.multicast_update(7, [(1, 1)]))
    assert [e.canonical_code for e in write_errors(err.value)] == [code_pb2.ALREADY_EXISTS]
    client.write(pc.multicast_update(7, [(4, 9)], U.MODIFY))
    ent = p4runtime_pb2.Entity()
    ent.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
    (got,) = list(client.read(ent))
    g = got.packet_replication_engine_entry.multicast_group_entry
    assert g.multicast_group_id == 7 and [(r.egress_port, r.instance) for r in g.replicas] == \
        [(4, 9)]
    client.write(pc.multicast_update(7, [], U.DELETE))
    assert list(client.read(ent)) == []
    with pytest.raises(grpc.RpcError) as err:
        client.write(pc.multicast_update(7, [], U.DELETE))
    assert [e.canonical_code for e in write_errors(err.value)] == [code_pb2.NOT_FOUND]


def test_counters_and_registers(server: tuple[str, Switch]) -> None:
    c = pc.Client(server[0], device_id=1, election_id=1)
    config, p4info = compiled("stateful")
    c.set_pipeline(p4info, config)
    from tests.embedded.test_stateful import s_frame

    server[1].process(1, s_frame(op=1, idx=3, val=40))
    server[1].process(1, s_frame(op=1, idx=3, val=2))
    ent = p4runtime_pb2.Entity()
    ent.register_entry.register_id = c.object_id("registers", "MyIngress.acc")
    ent.register_entry.index.index = 3
    (got,) = list(c.read(ent))
    assert int.from_bytes(got.register_entry.data.bitstring, "big") == 42
    upd = p4runtime_pb2.Update(type=U.MODIFY)
    upd.entity.register_entry.CopyFrom(ent.register_entry)
    upd.entity.register_entry.data.bitstring = b"\x07"
    c.write(upd)
    (got,) = list(c.read(ent))
    assert got.register_entry.data.bitstring == b"\x07"
    cent = p4runtime_pb2.Entity()
    cent.counter_entry.counter_id = c.object_id("counters", "MyIngress.seen")
    counts = {e.counter_entry.index.index: e.counter_entry.data.packet_count
              for e in c.read(cent)}
    assert len(counts) == 16 and counts[3] == 2 and sum(counts.values()) == 2
    cent.counter_entry.index.index = 99
    with pytest.raises(grpc.RpcError) as err:
        list(c.read(cent))
    assert err.value.code() == grpc.StatusCode.OUT_OF_RANGE
    c.close()


def test_verify_save_then_commit(server: tuple[str, Switch]) -> None:
    c = pc.Client(server[0], device_id=1, election_id=1)
    config, p4info = compiled("forward")
    A = p4runtime_pb2.SetForwardingPipelineConfigRequest
    req = A(device_id=1, action=A.VERIFY_AND_SAVE)
    req.election_id.low = 1
    req.config.p4info.CopyFrom(p4info)
    req.config.p4_device_config = config
    c.stub.SetForwardingPipelineConfig(req)
    assert server[1].program is None  # saved, not yet running
    commit = A(device_id=1, action=A.COMMIT)
    commit.election_id.low = 1
    c.stub.SetForwardingPipelineConfig(commit)
    assert server[1].program is not None and "MyIngress.route" in server[1].program.tables
    c.close()


def test_clone_session_write_and_read(client: pc.Client) -> None:
    u = p4runtime_pb2.Update(type=U.INSERT)
    cs = u.entity.packet_replication_engine_entry.clone_session_entry
    cs.session_id = 4
    cs.replicas.add(egress_port=3, instance=1)
    client.write(u)
    ent = p4runtime_pb2.Entity()
    ent.packet_replication_engine_entry.clone_session_entry.session_id = 4
    (got,) = list(client.read(ent))
    replicas = got.packet_replication_engine_entry.clone_session_entry.replicas
    assert [(r.egress_port, r.instance) for r in replicas] == [(3, 1)]


def test_second_server_on_same_address_fails(server: tuple[str, Switch]) -> None:
    with pytest.raises(OSError, match="cannot listen"):
        serve(Switch(), 2, server[0], threading.Lock())
