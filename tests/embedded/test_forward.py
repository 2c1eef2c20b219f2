"""forward.p4 on the embedded target: lpm routing, TTL, IPv4 checksum verify and update."""

from __future__ import annotations

from typing import Any

from emulation.targets.embedded import calculations as calc
from emulation.targets.embedded.bench import ipv4_udp


def routed(device: Any) -> Any:
    dev = device("forward")
    dev.insert("MyIngress.route", {"hdr.ipv4.dst_addr": (0x0A000000, 8)}, "MyIngress.forward",
               {"port": 2, "dmac": 0x0A0B0C0D0E0F})
    return dev


def test_forward_rewrites_ttl_macs_and_checksum(device: Any) -> None:
    dev = routed(device)
    frame = ipv4_udp(b"payload!", 5000, dst=0x0A000005)
    ((port, out),) = dev.send(1, frame)
    assert port == 2
    assert out[:6] == bytes.fromhex("0a0b0c0d0e0f") and out[6:12] == frame[:6]
    assert out[14 + 8] == frame[14 + 8] - 1
    assert calc.csum16(out[14:34]) == 0  # checksum recomputed by update_checksum
    assert out[34:] == frame[34:]


def test_bad_checksum_ttl_one_unrouted_and_non_ip_dropped(device: Any) -> None:
    dev = routed(device)
    frame = bytearray(ipv4_udp(b"x", 5000, dst=0x0A000005))
    frame[24] ^= 0xFF
    assert dev.send(1, bytes(frame)) == []
    ttl1 = bytearray(ipv4_udp(b"x", 5000, dst=0x0A000005))
    ttl1[22] = 1
    ttl1[24:26] = b"\x00\x00"
    ttl1[24:26] = calc.csum16(bytes(ttl1[14:34])).to_bytes(2, "big")
    assert dev.send(1, bytes(ttl1)) == []
    assert dev.send(1, ipv4_udp(b"x", 5000, dst=0x0B000005)) == []
    assert dev.send(1, bytes(12) + b"\x86\xdd" + bytes(40)) == []


def test_direct_counter_counts_hits(device: Any) -> None:
    dev = routed(device)
    frame = ipv4_udp(b"x", 5000, dst=0x0A000005)
    for _ in range(4):
        dev.send(1, frame)
    (entry,) = dev.program.tables["MyIngress.route"].entries.values()
    assert (entry.packets, entry.bytes) == (4, 4 * len(frame))
