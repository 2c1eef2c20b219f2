"""TCP and UDP checksums over the payload (``verify/update_checksum_with_payload``) in
tests/embedded/p4/l4_checksum.p4 (as p4c lays it out in bmv2 JSON: handwritten.l4_checksum,
and p4c's own build where committed): every checksum the switch writes is the one
scapy computes for the rewritten frame, and a frame whose payload no longer matches its
checksum fails verification (so the payload is part of it)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from control_plane.drivers.p4runtime import P4Info
from tests.embedded import handwritten as hw
from tests.embedded.conftest import BUILD, compiled

# the p4c build where it is committed, and hand-written JSON in p4c's layout (handwritten.py)
SOURCES = {"handwritten": lambda: (json.dumps(hw.l4_checksum()).encode(),
                                   P4Info(hw.l4_checksum_p4info()))}
if (BUILD / "l4_checksum.json").exists():
    SOURCES["p4c"] = lambda: compiled("l4_checksum")

NEW_DST, NEW_PORT = "10.9.8.7", 8080


@pytest.fixture(params=sorted(SOURCES))
def sw(device: Any, request: Any) -> Any:
    dev = device("l4_checksum", SOURCES[request.param]())
    dev.insert("MyIngress.nat", {"hdr.ipv4.dstAddr": 0x0A000001}, "MyIngress.rewrite",
               {"addr": 0x0A090807, "port": NEW_PORT})
    return dev


def frame(l4: Any, payload: bytes, dst: str = "10.0.0.1") -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                 / IP(src="10.0.0.2", dst=dst, ttl=64) / l4 / Raw(payload))


def scapy_sums(data: bytes) -> tuple[int, int]:
    """(IPv4, TCP or UDP checksum) scapy computes for ``data``'s fields and payload."""
    pkt = Ether(data)
    l4 = pkt[TCP] if TCP in pkt else pkt[UDP]
    del pkt[IP].chksum
    del l4.chksum
    again = Ether(bytes(pkt))
    return again[IP].chksum, (again[TCP] if TCP in again else again[UDP]).chksum


def sent(sw: Any, data: bytes) -> bytes:
    (port, out), = sw.send(1, data)
    assert port == 2
    return out


@pytest.mark.parametrize("l4", [
    TCP(sport=5793, dport=80, flags="PA", seq=7, ack=9),
    TCP(sport=5501, dport=80, options=[("MSS", 636), ("EOL", None)]),  # options: payload
    UDP(sport=5793, dport=80),
], ids=["tcp", "tcp-options", "udp"])
@pytest.mark.parametrize("payload", [b"deadbeefdeadbeef", b"odd", b""],
                         ids=["even", "odd", "empty"])
def test_rewritten_frame_gets_the_checksums_scapy_computes(sw: Any, l4: Any,
                                                          payload: bytes) -> None:
    out = sent(sw, frame(l4, payload))
    pkt = Ether(out)
    assert pkt[IP].dst == NEW_DST and pkt[IP].ttl == 63
    got = pkt[TCP] if TCP in pkt else pkt[UDP]
    assert got.dport == NEW_PORT and bytes(got.payload)[-len(payload) or len(out):] == payload
    assert (pkt[IP].chksum, got.chksum) == scapy_sums(out)


def test_frame_without_entry_passes_unchanged(sw: Any) -> None:
    data = frame(UDP(sport=1, dport=2), b"payload bytes", dst="10.0.0.3")
    assert sent(sw, data) == data  # the checksums computed afresh equal the sender's


@pytest.mark.parametrize("l4", [TCP(sport=1, dport=80), UDP(sport=1, dport=80)],
                         ids=["tcp", "udp"])
def test_payload_changed_in_flight_fails_verification(sw: Any, l4: Any) -> None:
    good = frame(l4, b"deadbeefdeadbeef")
    assert len(sw.send(1, good)) == 1
    bad = good[:-1] + bytes([good[-1] ^ 0x01])  # headers intact, payload corrupted
    assert sw.send(1, bad) == []
    assert sw.switch.errors["checksum_error"] == 1
    assert sw.switch.drops["ingress_drop"] == 1
