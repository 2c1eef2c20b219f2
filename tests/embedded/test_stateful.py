"""stateful.p4 on the embedded target: registers, counters, hashes, saturating and signed
arithmetic, header validity, lookahead, parser errors, if-in-action, exit, multicast/PRE."""

from __future__ import annotations

import struct
from typing import Any

from control_plane.drivers.p4runtime import multicast_group_update
from emulation.targets.embedded import calculations as calc

ETH = bytes.fromhex("0000000000aa0000000000bb") + b"\x88\xb6"
S_FMT = struct.Struct(">BBIiIIHHi")
M32 = 0xFFFFFFFF


def s_frame(op: int, idx: int = 0, val: int = 0, sval: int = 0, marker: bool = False,
            extra: bytes = b"") -> bytes:
    return ETH + (b"\xff\x00" if marker else b"") + S_FMT.pack(op, idx, val, sval, 0, 0, 0, 0,
                                                               0) + extra


def fields(frame: bytes, marker: bool = False) -> dict[str, int]:
    off = 14 + (2 if marker else 0)
    names = ("op", "idx", "val", "sval", "out1", "out2", "out3", "out4", "out5")
    return dict(zip(names, S_FMT.unpack_from(frame, off), strict=True))


def one(dev: Any, frame: bytes, port: int = 4) -> bytes:
    out = dev.send(port, frame)
    assert [p for p, _ in out] == [port]
    return out[0][1]


def test_register_accumulates_and_counter_counts(device: Any) -> None:
    dev = device("stateful")
    assert fields(one(dev, s_frame(1, idx=3, val=40)))["out1"] == 0
    assert fields(one(dev, s_frame(1, idx=3, val=2)))["out1"] == 40
    assert dev.program.res.registers["MyIngress.acc"].values[3] == 42
    seen = dev.program.res.counters["MyIngress.seen"]
    assert seen.packets[3] == 2 and seen.bytes[3] == 2 * len(s_frame(1))


def test_hashes_match_bmv2_algorithms(device: Any) -> None:
    dev = device("stateful")
    val, idx = 0xDEADBEEF, 0x42
    f = fields(one(dev, s_frame(2, idx=idx, val=val)))
    data = val.to_bytes(4, "big") + bytes([idx])
    assert f["out3"] == calc.crc16(data)
    assert f["out1"] == calc.crc32(data)
    assert f["out4"] == calc.csum16(val.to_bytes(4, "big"))
    assert f["out2"] == 5 + val % 1000


def test_saturating_arithmetic(device: Any) -> None:
    dev = device("stateful")
    f = fields(one(dev, s_frame(3, val=0x20000000, sval=0x20000000)))
    assert f["out1"] == M32 and f["out2"] == 0x1FFFFFF0 and f["out5"] == 0x7FFFFFFF
    f = fields(one(dev, s_frame(3, val=5, sval=-5)))
    assert f["out1"] == 0xF0000005 and f["out2"] == 0 and f["out5"] == 0x6FFFFFFB


def test_signed_shift_wraparound_and_bit_ops(device: Any) -> None:
    dev = device("stateful")
    val = 0xF1234567
    f = fields(one(dev, s_frame(8, val=val, sval=-20)))
    assert f["out5"] == -5
    assert f["out1"] == (val << 3) & M32
    assert f["out2"] == (val * 3) & M32
    assert f["out3"] == ((val >> 4) & 0xFFFF) ^ 0x5A5A
    assert f["out4"] == ~val & 0xFFFF
    assert f["val"] == (val & 0xFF00FF00) | 1


def test_if_inside_action(device: Any) -> None:
    dev = device("stateful")
    f = fields(one(dev, s_frame(6, val=200)))
    assert (f["out1"], f["out2"]) == (1, 207)
    f = fields(one(dev, s_frame(6, val=50)))
    assert (f["out1"], f["out2"]) == (2, 57)


def test_exit_ends_ingress_only(device: Any) -> None:
    dev = device("stateful")
    f = fields(one(dev, s_frame(7)))
    assert (f["out1"], f["out2"], f["out3"]) == (0x77, 0x88, 0)


def test_lookahead_selects_marker_and_validity_ops(device: Any) -> None:
    dev = device("stateful")
    out = one(dev, s_frame(1, idx=1, val=1, marker=True))
    assert out[14:16] == b"\xff\x00" and fields(out, marker=True)["op"] == 1
    # op 5: extra parsed then invalidated, marker made valid and filled from extra.x
    out = one(dev, s_frame(5, extra=b"\x33\x44") + b"tail")
    assert out[14:16] == b"\xab\x33"
    assert out[16:16 + S_FMT.size] == s_frame(5)[14:] and out.endswith(b"tail")
    assert len(out) == 14 + 2 + S_FMT.size + 4


def test_parser_errors_reach_ingress(device: Any) -> None:
    dev = device("stateful")
    bad_op = s_frame(0xEE) + b"zz"
    out = one(dev, bad_op)
    assert out == bad_op[:14 + S_FMT.size] + b"\xe0\x01" + b"zz"
    short = ETH + b"\x01\x02\x03"
    assert one(dev, short) == ETH + b"\xe0\x02" + b"\x01\x02\x03"
    # counted by name, the program's own error too
    assert dev.switch.errors == {"parser_error.BadOp": 1, "parser_error.PacketTooShort": 1}


def test_unknown_traffic_dropped(device: Any) -> None:
    dev = device("stateful")
    assert dev.send(1, bytes(12) + b"\x08\x00" + bytes(30)) == []


def test_multicast_replicas_egress_rid_and_egress_drop(device: Any) -> None:
    dev = device("stateful")
    dev.write(multicast_group_update(9, [(2, 200), (1, 100), (7, 300)]))
    out = dev.send(4, s_frame(4, idx=9))
    got = [(port, fields(f)["out3"], fields(f)["out4"]) for port, f in out]
    assert got == [(2, 200, 2), (1, 100, 1)]  # port 7 dropped by egress mark_to_drop
    assert dev.send(4, s_frame(4, idx=10)) == []  # group 10 does not exist
