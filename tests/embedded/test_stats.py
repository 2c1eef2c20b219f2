"""The target's drop reasons, read over gRPC with the stats call beside P4Runtime (defect 5).

Frames go through the port loop's own path (``PortLoop.handle``: switch, then transmit) with
no interface attached, so a forwarded frame meets ``no_such_port`` without needing root."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent import futures
from types import SimpleNamespace

import grpc
import pytest

from control_plane.drivers.p4runtime import P4RuntimeClient
from emulation.measure.metrics import COLUMNS, table
from emulation.runs.emulate import Emulation
from emulation.targets.embedded.bench import ipv4_udp
from emulation.targets.embedded.p4runtime_server import serve
from emulation.targets.embedded.pipeline import DROP_REASONS, Switch
from emulation.targets.embedded.ports import PortLoop
from emulation.targets.embedded.pre import CloneSession
from emulation.targets.embedded.stats import METHOD, StatsError, describe, read_stats, reasons
from tests.embedded.conftest import compiled
from tests.embedded.test_loader import load, minimal
from tests.embedded.test_p4runtime_server import free_port
from tests.embedded.test_stateful import s_frame

NO_DROPS = dict.fromkeys(DROP_REASONS, 0)


class Running:
    """A switch with its port loop (no interfaces) and P4Runtime + stats server on loopback."""

    def __init__(self) -> None:
        self.switch = Switch()
        lock = threading.Lock()
        self.loop = PortLoop({}, self.switch.process_batch, lock, self.switch.drops)
        self.address = f"127.0.0.1:{free_port()}"
        self.server, _ = serve(self.switch, 1, self.address, lock, ports=self.loop)

    def program(self, name: str) -> P4RuntimeClient:
        client = P4RuntimeClient(self.address, device_id=1, election_id=(0, 1)).connect()
        config, p4info = compiled(name)
        client.set_pipeline(p4info, config)
        return client


@pytest.fixture
def running() -> Iterator[Running]:
    r = Running()
    yield r
    r.server.stop(grace=None)
    r.loop.stop()


def test_stats_call_counts_why_forwarded_frames_vanish(running: Running) -> None:
    good = ipv4_udp(b"x" * 8, 5000, dst=0x0A000001)
    running.loop.handle(1, good)  # before any pipeline
    client = running.program("forward")
    client.insert_table_entry("MyIngress.route", {"hdr.ipv4.dst_addr": (0x0A000000, 8)},
                              "MyIngress.forward", {"port": 2, "dmac": 0xB})
    bad_checksum = bytearray(good)
    bad_checksum[24] ^= 0xFF  # IPv4 header checksum
    for frame in (good,  # routed to port 2, which no interface is attached to
                  good[:20],  # IPv4 cut after 6 bytes: parser error, then the program drops
                  bytes(bad_checksum),  # checksum verify fails, then the program drops
                  ipv4_udp(b"x", 5000, dst=0x0B000001)):  # no route: the default action drops
        running.loop.handle(1, frame)
    client.close()
    stats = read_stats(running.address)
    assert stats["schema"] == "inart.embedded.stats/1"
    assert (stats["device_id"], stats["pipeline"], stats["ports"]) == (1, True, {})
    assert (stats["rx"], stats["tx"]) == (5, 1)
    assert stats["drops"] == dict(NO_DROPS, no_pipeline=1, ingress_drop=3, no_such_port=1)
    assert stats["errors"] == {"checksum_error": 1, "parser_error.PacketTooShort": 1}
    assert describe(reasons(stats)) == ("no_pipeline=1 ingress_drop=3 no_such_port=1 "
                                        "checksum_error=1 parser_error.PacketTooShort=1")
    running.loop.handle(1, good)
    assert reasons(read_stats(running.address), since=stats) == {"no_such_port": 1}


def test_stats_call_counts_replication_losses_and_named_parser_errors(running: Running) -> None:
    client = running.program("stateful")
    client.insert_multicast_group(9, [(2, 200), (7, 300)])  # the program drops port 7's copy
    client.insert_multicast_group(11, [])
    for frame in (s_frame(4, idx=9), s_frame(4, idx=10), s_frame(4, idx=11),
                  s_frame(0xEE) + b"zz"):  # the program's own error (BadOp), reflected
        running.loop.handle(4, frame)
    client.close()
    stats = read_stats(running.address)
    assert stats["drops"] == dict(NO_DROPS, egress_drop=1, mcast_group_unknown=1,
                                  mcast_group_empty=1, no_such_port=2)
    assert stats["errors"] == {"parser_error.BadOp": 1}


def test_stats_request_must_be_empty(running: Running) -> None:
    with grpc.insecure_channel(running.address) as channel:
        get = channel.unary_unary(METHOD)
        assert json.loads(get(b"{}", timeout=5))["drops"] == NO_DROPS
        for bad, what in ((b'{"reset": true}', "takes no fields"), (b"nope", "not JSON")):
            with pytest.raises(grpc.RpcError) as err:
                get(bad, timeout=5)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert what in err.value.details()


def test_read_stats_names_a_switch_without_the_method() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))  # like bmv2: no such service
    address = f"127.0.0.1:{free_port()}"
    server.add_insecure_port(address)
    server.start()
    try:
        with pytest.raises(StatsError, match="UNIMPLEMENTED.*not an embedded target"):
            read_stats(address)
    finally:
        server.stop(grace=None)


def test_clone_to_a_missing_session_is_counted() -> None:
    doc = minimal()
    doc["actions"][0]["primitives"].append(
        {"op": "clone_ingress_pkt_to_egress",
         "parameters": [{"type": "hexstr", "value": "0x5"}, {"type": "hexstr", "value": "0x0"}]})
    sw = Switch(load(doc))
    frame = bytes(range(20))
    assert sw.process(3, frame) == [(3, frame)]
    assert sw.drops == {"clone_session_unknown": 1}
    sw.pre.clones[5] = CloneSession(5, [(2, 0)])
    assert sorted(p for p, _ in sw.process(3, frame)) == [2, 3]
    assert sw.drops == {"clone_session_unknown": 1}


def test_emulation_reads_each_embedded_switch_and_prints_its_drops(running: Running) -> None:
    """Emulation.run's per-switch drop reasons (stand-ins for the network and addressing; the
    Mininet run itself is tests/emulation/test_emulation_e2e.py)."""
    emu = Emulation.__new__(Emulation)
    emu.topo = SimpleNamespace(switches=["v1", "v2"])
    emu.addr = SimpleNamespace(grpc_address=lambda sw: running.address if sw == "v1"
                               else f"127.0.0.1:{free_port()}")  # v2: nothing listens
    emu.net = SimpleNamespace(target="bmv2")
    assert emu.target_stats() == {}
    emu.net.target = "embedded"
    before = emu.target_stats()
    assert list(before) == ["v1"]  # v2 is reported and left out, the run goes on
    running.loop.handle(1, b"\x00" * 20)  # no pipeline yet
    after = emu.target_stats()
    drops = {sw: reasons(after[sw], since=before[sw]) for sw in after}
    fmt = {k: ("inart" if "s}" in f else True if "!s" in f else 0 if "d}" in f else 1.0)
           for k, f in COLUMNS}
    # v4 lost only what its program dropped (absorbed contributions): its counters say why
    text = table([dict(fmt, target_drops=drops | {"v3": {}, "v4": {"ingress_drop": 5}})])
    assert text.splitlines()[-1] == "inart: embedded drops v1: no_pipeline=1"
    assert "v3" not in text and "v4" not in text
