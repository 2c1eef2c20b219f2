"""The P4Runtime service over a loopback gRPC port: arbitration, pipeline, Write/Read, errors.

Driven by the project's client (control_plane/drivers/p4runtime/); requests the client does not
make (GetForwardingPipelineConfig, Capabilities, VERIFY_AND_SAVE) go through the raw stubs, and
malformed entries are built by the client, then edited."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2

from control_plane.drivers.p4runtime import (
    P4RuntimeClient,
    P4RuntimeError,
    build_default_entry,
    build_table_entry,
    table_update,
)
from control_plane.localhost import free_port
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from emulation.targets.embedded.bench import ipv4_udp
from emulation.targets.embedded.p4runtime_server import serve
from emulation.targets.embedded.pipeline import Switch
from tests.embedded.conftest import compiled

U = p4runtime_pb2.Update
ROUTE = "MyIngress.route"


@pytest.fixture
def server() -> Iterator[tuple[str, Switch]]:
    switch = Switch()
    address = f"127.0.0.1:{free_port()}"
    srv, _ = serve(switch, 1, address, threading.Lock())
    yield address, switch
    srv.stop(grace=None)


def connect(address: str, election: int, primary: bool = True) -> P4RuntimeClient:
    return P4RuntimeClient(address, device_id=1, election_id=(0, election)).connect(primary)


@pytest.fixture
def client(server: tuple[str, Switch]) -> Iterator[P4RuntimeClient]:
    c = connect(server[0], 10)
    config, p4info = compiled("forward")
    c.set_pipeline(p4info, config)
    yield c
    c.close()


@pytest.fixture
def raw_stub(server: tuple[str, Switch]) -> Iterator[p4runtime_pb2_grpc.P4RuntimeStub]:
    """The bare service, for requests the client does not make."""
    channel = grpc.insecure_channel(server[0])
    yield p4runtime_pb2_grpc.P4RuntimeStub(channel)
    channel.close()


def write_errors(exc: P4RuntimeError) -> list[p4runtime_pb2.Error]:
    """The per-update p4.v1.Error list of a failed Write (P4Runtime spec section 12)."""
    assert exc.code == grpc.StatusCode.UNKNOWN
    return exc.errors


def match(prefix: int, plen: int) -> dict[str, Any]:
    return {"hdr.ipv4.dst_addr": (prefix, plen)}


def forward(port: int) -> tuple[str, dict[str, int]]:
    return "MyIngress.forward", {"port": port, "dmac": 0xA}


def route(c: P4RuntimeClient, prefix: int, plen: int, port: int) -> p4runtime_pb2.TableEntry:
    assert c.info is not None
    return build_table_entry(c.info, ROUTE, match(prefix, plen), *forward(port))


def test_arbitration_primary_and_backup(server: tuple[str, Switch]) -> None:
    primary = connect(server[0], 5)
    assert primary.arbitration_code == code_pb2.OK
    refused = P4RuntimeClient(server[0], device_id=1, election_id=(0, 4))
    with pytest.raises(P4RuntimeError, match="not primary"):
        refused.connect()  # a backup only when asked for
    refused.close()
    backup = connect(server[0], 3, primary=False)
    assert backup.arbitration_code == code_pb2.ALREADY_EXISTS
    config, p4info = compiled("forward")
    with pytest.raises(P4RuntimeError) as err:
        backup.set_pipeline(p4info, config)
    assert err.value.code == grpc.StatusCode.PERMISSION_DENIED
    primary.set_pipeline(p4info, config)
    primary.close()  # the backup is told it is now the primary
    backup.wait_primary(timeout=5)
    assert backup.is_primary
    backup.set_pipeline(p4info, config)
    backup.close()


def test_wait_primary_times_out_while_primary_stays(server: tuple[str, Switch]) -> None:
    primary = connect(server[0], 5)
    backup = connect(server[0], 3, primary=False)
    with pytest.raises(P4RuntimeError, match="still not primary"):
        backup.wait_primary(timeout=0.5)
    backup.close()
    primary.close()


def test_write_without_pipeline_and_bad_pipeline(server: tuple[str, Switch]) -> None:
    c = connect(server[0], 1)
    config, p4info = compiled("forward")
    c.use_p4info(p4info)
    with pytest.raises(P4RuntimeError) as err:
        c.insert_table_entry(ROUTE, match(0x0A000000, 8), *forward(2))
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION
    bad = config.replace(b'"mark_to_drop"', b'"execute_meter"')
    with pytest.raises(P4RuntimeError) as err:
        c.set_pipeline(p4info, bad)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "execute_meter" in str(err.value) and "actions[" in str(err.value)
    c.close()


def test_wrong_device_id_is_not_found(raw_stub: Any) -> None:
    req = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=9)
    with pytest.raises(grpc.RpcError) as err:
        raw_stub.GetForwardingPipelineConfig(req, timeout=10)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_get_pipeline_config_and_capabilities(client: P4RuntimeClient, raw_stub: Any) -> None:
    assert client.info is not None
    R = p4runtime_pb2.GetForwardingPipelineConfigRequest
    rep = raw_stub.GetForwardingPipelineConfig(R(device_id=1, response_type=R.ALL), timeout=10)
    assert rep.config.p4info == client.info.proto
    assert rep.config.p4_device_config == compiled("forward")[0]
    rep = raw_stub.GetForwardingPipelineConfig(R(device_id=1, response_type=R.COOKIE_ONLY),
                                               timeout=10)
    assert not rep.config.p4_device_config
    caps = raw_stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
    assert caps.p4runtime_api_version == "1.4.1"


def test_insert_read_modify_delete_and_errors(client: P4RuntimeClient, server: Any) -> None:
    switch = server[1]
    client.insert_table_entry(ROUTE, match(0x0A000000, 8), *forward(2))
    with pytest.raises(P4RuntimeError) as err:
        client.insert_table_entry(ROUTE, match(0x0A000000, 8), *forward(3))
    assert [e.canonical_code for e in write_errors(err.value)] == [code_pb2.ALREADY_EXISTS]
    assert "ALREADY_EXISTS" in str(err.value)
    frame = ipv4_udp(b"x" * 10, 5000, dst=0x0A010203)
    assert switch.process(1, frame)[0][0] == 2
    client.modify_table_entry(ROUTE, match(0x0A000000, 8), *forward(5))
    assert switch.process(1, frame)[0][0] == 5
    entries = client.read_table_entries(ROUTE)
    assert len(entries) == 1
    te = entries[0]
    assert te.match[0].lpm.value == b"\x0a\x00\x00\x00" and te.match[0].lpm.prefix_len == 8
    assert te.action.action.params[0].value == b"\x05"  # canonical: no leading zeros
    client.delete_table_entry(ROUTE, match(0x0A000000, 8))
    assert switch.process(1, frame) == []
    with pytest.raises(P4RuntimeError) as err:
        client.delete_table_entry(ROUTE, match(0x0A000000, 8))
    assert [e.canonical_code for e in write_errors(err.value)] == [code_pb2.NOT_FOUND]


def test_batch_reports_every_update(client: P4RuntimeClient) -> None:
    good = table_update(route(client, 0x0B000000, 8, 2))
    dup = table_update(route(client, 0x0B000000, 8, 2))
    bad_bits = table_update(route(client, 0x0C000000, 8, 2))
    bad_bits.entity.table_entry.action.action.params[0].value = b"\x7f\xff"  # > 9 bits
    bad_lpm = table_update(route(client, 0x0D000000, 8, 2))
    bad_lpm.entity.table_entry.match[0].lpm.value = b"\x0d\x00\x00\x01"  # beyond the prefix
    with pytest.raises(P4RuntimeError) as err:
        client.write([good, dup, bad_bits, bad_lpm])
    codes = [e.canonical_code for e in write_errors(err.value)]
    assert codes == [code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.OUT_OF_RANGE,
                     code_pb2.INVALID_ARGUMENT]


def test_default_action_modify_and_read(client: P4RuntimeClient, server: Any) -> None:
    assert client.info is not None
    client.set_default_action(ROUTE, "MyIngress.forward", {"port": 7, "dmac": 1})
    assert server[1].process(1, ipv4_udp(b"", 1, dst=0x01020304))[0][0] == 7
    got = client.read_default_entry(ROUTE)
    assert got.is_default_action
    assert got.action.action.action_id == client.info.action("MyIngress.forward").preamble.id
    te = build_default_entry(client.info, ROUTE, "MyIngress.forward", {"port": 7, "dmac": 1})
    with pytest.raises(P4RuntimeError) as err:
        client.write([table_update(te, U.INSERT)])
    assert [e.canonical_code for e in write_errors(err.value)] == [code_pb2.INVALID_ARGUMENT]
    client.set_default_action(ROUTE)  # no action: back to the program's default
    assert server[1].process(1, ipv4_udp(b"", 1, dst=0x01020304)) == []


def test_direct_counter_read(client: P4RuntimeClient, server: Any) -> None:
    client.insert_table_entry(ROUTE, match(0x0A000000, 8), *forward(2))
    frame = ipv4_udp(b"x" * 10, 5000, dst=0x0A010203)
    for _ in range(3):
        server[1].process(1, frame)
    ((entry, count),) = client.read_direct_counters(ROUTE)
    assert entry.match[0].lpm.prefix_len == 8
    assert count.packets == 3
    assert count.bytes == 3 * len(frame)


def test_multicast_group_lifecycle(client: P4RuntimeClient) -> None:
    client.insert_multicast_group(7, [(1, 1), (2, 1), (3, 2)])
    with pytest.raises(P4RuntimeError) as err:
        client.insert_multicast_group(7, [(1, 1)])
    assert [e.canonical_code for e in write_errors(err.value)] == [code_pb2.ALREADY_EXISTS]
    client.modify_multicast_group(7, [(4, 9)])
    assert client.read_multicast_groups() == {7: [(4, 9)]}
    client.delete_multicast_group(7)
    assert client.read_multicast_groups() == {}
    with pytest.raises(P4RuntimeError) as err:
        client.delete_multicast_group(7)
    assert [e.canonical_code for e in write_errors(err.value)] == [code_pb2.NOT_FOUND]


def test_counters_and_registers(server: tuple[str, Switch]) -> None:
    c = connect(server[0], 1)
    config, p4info = compiled("stateful")
    c.set_pipeline(p4info, config)
    from tests.embedded.test_stateful import s_frame

    server[1].process(1, s_frame(op=1, idx=3, val=40))
    server[1].process(1, s_frame(op=1, idx=3, val=2))
    assert c.read_register("MyIngress.acc", 3) == 42
    c.write_register("MyIngress.acc", 3, 7)
    ent = p4runtime_pb2.Entity()
    ent.register_entry.register_id = p4info.register("MyIngress.acc").preamble.id
    ent.register_entry.index.index = 3
    (got,) = c.read(ent)
    assert got.register_entry.data.bitstring == b"\x07"
    assert c.read_register("MyIngress.acc", 3) == 7
    counts = {i: v.packets for i, v in c.read_counters("MyIngress.seen").items()}
    assert len(counts) == 16 and counts[3] == 2 and sum(counts.values()) == 2
    cent = p4runtime_pb2.Entity()  # an index the client would refuse: the server's answer
    cent.counter_entry.counter_id = p4info.counter("MyIngress.seen").preamble.id
    cent.counter_entry.index.index = 99
    with pytest.raises(P4RuntimeError) as err:
        c.read(cent)
    assert err.value.code == grpc.StatusCode.OUT_OF_RANGE
    c.close()


def test_verify_save_then_commit(server: tuple[str, Switch], raw_stub: Any) -> None:
    c = connect(server[0], 1)  # primary, so the raw requests below carry its election id
    config, p4info = compiled("forward")
    A = p4runtime_pb2.SetForwardingPipelineConfigRequest
    req = A(device_id=1, action=A.VERIFY_AND_SAVE)
    req.election_id.low = 1
    req.config.p4info.CopyFrom(p4info.proto)
    req.config.p4_device_config = config
    raw_stub.SetForwardingPipelineConfig(req, timeout=10)
    assert server[1].program is None  # saved, not yet running
    commit = A(device_id=1, action=A.COMMIT)
    commit.election_id.low = 1
    raw_stub.SetForwardingPipelineConfig(commit, timeout=10)
    assert server[1].program is not None and "MyIngress.route" in server[1].program.tables
    c.close()


def test_clone_session_write_and_read(client: P4RuntimeClient) -> None:
    client.insert_clone_session(4, [(3, 1)])
    assert client.read_clone_session(4) == [(3, 1)]


def test_second_server_on_same_address_fails(server: tuple[str, Switch]) -> None:
    with pytest.raises(OSError, match="cannot listen"):
        serve(Switch(), 2, server[0], threading.Lock())
