"""The target as a process on real veth interfaces: frames in, frames out (root only)."""

from __future__ import annotations

import select
import socket
import time

import pytest

from control_plane.drivers.p4runtime import P4RuntimeClient
from emulation.targets.embedded.bench import free_port, ipv4_udp, start_switch
from emulation.targets.embedded.stats import read_stats
from host_stack.netns import can_create_veths, veth_pairs
from tests.embedded.conftest import compiled

REASON = can_create_veths()


def raw_socket(iface: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # nothing until bound (see ports.py)
    s.bind((iface, 0x0003))  # ETH_P_ALL; Python converts it to network order
    return s


def receive(s: socket.socket, timeout: float, expected: int) -> list[bytes]:
    """Frames until ``expected`` arrived plus a short quiet period, or until ``timeout``."""
    frames, deadline = [], time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        if len(frames) >= expected:
            left = min(left, 0.3)
        ready, _, _ = select.select([s], [], [], left)
        if not ready:
            break
        frames.append(s.recv(65535))
    return frames


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_switch_process_forwards_real_frames() -> None:
    config, p4info = compiled("forward")
    with veth_pairs(f"ie{free_port() % 1000}", 2) as pairs:
        port = free_port()
        switch = start_switch("embedded", [pairs[0][1], pairs[1][1]], port)
        tx, rx = raw_socket(pairs[0][0]), raw_socket(pairs[1][0])
        try:
            client = P4RuntimeClient(f"127.0.0.1:{port}", timeout=30).connect()
            client.set_pipeline(p4info, config)
            client.insert_table_entry("MyIngress.route", {"hdr.ipv4.dst_addr": (0x0A000000, 8)},
                                      "MyIngress.forward", {"port": 2, "dmac": 0xB})
            client.insert_table_entry("MyIngress.route", {"hdr.ipv4.dst_addr": (0x0C000000, 8)},
                                      "MyIngress.forward", {"port": 9, "dmac": 0xB})
            sent = [ipv4_udp(bytes([i]) * 20, 5000, dst=0x0A000000 + i) for i in range(1, 6)]
            for frame in sent:
                tx.send(frame)
            tx.send(b"\x00" * 14)  # runt frame: counted, never crashes the switch
            tx.send(ipv4_udp(b"x", 5000, dst=0x0B000001))  # no route: dropped
            tx.send(ipv4_udp(b"x", 5000, dst=0x0C000001))  # port 9: no interface attached
            tx.send(sent[0][:24])  # IPv4 header cut short: parser error
            got = receive(rx, 5.0, len(sent))
            assert len(got) == len(sent)
            for frame, out in zip(sent, got, strict=True):
                assert out[:6] == b"\x00" * 5 + b"\x0b" and out[34:] == frame[34:]
            assert switch.health() is None
            stats = read_stats(f"127.0.0.1:{port}")  # why the other frames vanished
            assert stats["ports"] == {"1": pairs[0][1], "2": pairs[1][1]}
            assert stats["drops"]["no_such_port"] == 1
            assert stats["drops"]["ingress_drop"] >= 3  # runt, no route, short IPv4
            assert stats["errors"]["parser_error.PacketTooShort"] == 1
            client.close()
        finally:
            switch.stop()
            tx.close()
            rx.close()
