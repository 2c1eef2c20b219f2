"""TCP and UDP checksums over the payload (``verify/update_checksum_with_payload``) in
handwritten.l4_checksum (a v1model program laid out as p4c's bmv2 back end does; also p4c's
own build of it where tests/embedded/p4/build has one): every checksum the switch writes is
the one scapy computes for the rewritten frame, a frame whose payload no longer matches its
checksum fails verification (so the payload is part of it), and the frames of p4c's
checksum-l4-bmv2 sample come out as bmv2 gave them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from control_plane.drivers.p4runtime import P4Info
from emulation.targets.embedded.pipeline import Switch, load_program
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


# p4c's testdata/p4_16_samples/checksum-l4-bmv2.stf: the frames sent and those bmv2 gave back
# (TCP; TCP after IPv4 options; UDP; TCP with IPv4 and TCP options), for a program that adds 1
# to the source port, 4 to the destination address and -1 to the TTL
BMV2_STF = [
    ("525400123502080027018bbc08004500003800010000400664af0a00020f0a01000116a10050000000000000"
     "00005002200047a6000064656164626565666465616462656566",
     "525400123502080027018BBC080045000038000100003F0665AB0A00020F0A01000516A20050000000000000"
     "00005002200047A1000064656164626565666465616462656566"),
    ("525400123502080027018bbc08004600003c000100004006174bc0a801bf0a02030483031000157d00500000"
     "000000000000500220008f6d000064656164626565666465616462656566",
     "525400123502080027018BBC08004600003C000100003F061847C0A801BF0A02030883031000157E00500000"
     "000000000000500220008F68000064656164626565666465616462656566"),
    ("CA0107FC001C11111111111108004500002C00010000401166BA0A0100040A01000116A100500018B99B6465"
     "6164626565666465616462656566",
     "CA0107FC001C11111111111108004500002C000100003F1167B60A0100040A01000516A200500018B9966465"
     "6164626565666465616462656566"),
    ("525400123502080027018bbc0800460000440001000040061743c0a801bf0a02030483031000157d00500000"
     "000000000000700220006ae500000204027c0000000064656164626565666465616462656566",
     "525400123502080027018BBC080046000044000100003F06183FC0A801BF0A02030883031000157E00500000"
     "000000000000700220006AE000000204027C0000000064656164626565666465616462656566"),
]


def test_frames_are_those_bmv2_gave_for_p4cs_checksum_l4_sample(sw: Any) -> None:
    """MyIngress.bump on the frames without IPv4 options (l4_checksum parses only those)."""
    sw.insert("MyIngress.nat", {"hdr.ipv4.dstAddr": 0x0A010001}, "MyIngress.bump", {})
    for sent_hex, bmv2_hex in (BMV2_STF[0], BMV2_STF[2]):
        assert sent(sw, bytes.fromhex(sent_hex)) == bytes.fromhex(bmv2_hex)


def test_checksum_l4_sample_gives_every_frame_bmv2_gave() -> None:
    """The sample itself (varbit IPv4 and TCP options inside the checksums), all four frames."""
    switch = Switch(load_program(json.dumps(hw.checksum_l4_sample())))
    for sent_hex, bmv2_hex in BMV2_STF:
        assert switch.process(0, bytes.fromhex(sent_hex)) == [(0, bytes.fromhex(bmv2_hex))]
    assert not switch.errors


def test_reparsed_frames_keep_their_payload_for_verification() -> None:
    """The general path (resubmit, recirculation, clones) parses with Switch.parse_into."""
    switch = Switch(load_program(json.dumps(hw.checksum_l4_sample())))
    good = bytes.fromhex(BMV2_STF[3][0])
    bad = good[:-1] + b"\x00"  # payload changed, headers intact
    checksum_error = switch.program.std["checksum_error"]
    for data, flagged in ((good, 0), (bad, 1)):
        S = switch.fresh_state(1, data, 0)
        switch.parse_into(S, data)
        assert S[checksum_error] == flagged
