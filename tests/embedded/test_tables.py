"""tables.p4 on the embedded target: exact/lpm/ternary/range/optional, priorities, const
entries, default actions, hit/miss and switch(action_run)."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from emulation.targets.embedded.tables import EntryError

ETH = bytes.fromhex("0000000000aa0000000000bb") + b"\x88\xb5"
OUTS = ("exact", "lpm", "ternary", "range", "const", "hit", "switch", "optional")


def t_frame(a: int = 0, b: int = 0, c: int = 0, d: int = 0, e: int = 0) -> bytes:
    return ETH + struct.pack(">BHIH", a, b, c, (d << 4) | e) + bytes(8)


def outs(dev: Any, **kw: int) -> dict[str, int]:
    ((port, frame),) = dev.send(3, t_frame(**kw))
    assert port == 3
    assert frame[:14 + 9] == t_frame(**kw)[:14 + 9]
    return dict(zip(OUTS, frame[14 + 9:], strict=True))


def test_exact_on_byte_and_12_bit_fields_and_default(device: Any) -> None:
    dev = device("tables")
    dev.insert("MyIngress.t_exact", {"hdr.t.a": 7, "hdr.t.d": 0xABC}, "MyIngress.set_exact",
               {"v": 0x42})
    assert outs(dev, a=7, d=0xABC)["exact"] == 0x42
    assert outs(dev, a=7, d=0xABC)["hit"] == 1
    assert outs(dev, a=7, d=0xABD)["exact"] == 0xEE  # default action miss_default
    assert outs(dev, a=7, d=0xABD)["hit"] == 2


def test_lpm_longest_prefix_wins(device: Any) -> None:
    dev = device("tables")
    for prefix, plen, v in ((0x0A000000, 8, 1), (0x0A010000, 16, 2), (0, 0, 3)):
        match = {"hdr.t.c": (prefix, plen)} if plen else {}
        dev.insert("MyIngress.t_lpm", match, "MyIngress.set_lpm", {"v": v})
    assert outs(dev, c=0x0A010203)["lpm"] == 2
    assert outs(dev, c=0x0A020000)["lpm"] == 1
    assert outs(dev, c=0x0B000000)["lpm"] == 3


def test_ternary_priority_larger_wins(device: Any) -> None:
    dev = device("tables")
    dev.insert("MyIngress.t_ternary", {"hdr.t.b": (0x1200, 0xFF00), "hdr.t.e": 1},
               "MyIngress.set_ternary", {"v": 1}, priority=10)
    dev.insert("MyIngress.t_ternary", {"hdr.t.b": (0x1234, 0xFFFF), "hdr.t.e": 1},
               "MyIngress.set_ternary", {"v": 2}, priority=20)
    assert outs(dev, b=0x1234, e=1)["ternary"] == 2
    assert outs(dev, b=0x1299, e=1)["ternary"] == 1
    assert outs(dev, b=0x1234, e=2)["ternary"] == 0


def test_range_with_priorities(device: Any) -> None:
    dev = device("tables")
    dev.insert("MyIngress.t_range", {"hdr.t.b": (100, 200)}, "MyIngress.set_range", {"v": 1},
               priority=1)
    dev.insert("MyIngress.t_range", {"hdr.t.b": (150, 300)}, "MyIngress.set_range", {"v": 2},
               priority=5)
    assert [outs(dev, b=b)["range"] for b in (120, 160, 250, 400, 100, 300)] == [1, 2, 2, 0, 1, 2]


def test_const_entries_in_source_order_and_const_default(device: Any) -> None:
    dev = device("tables")
    assert [outs(dev, a=a)["const"] for a in (0x01, 0x05, 0x15, 0x25)] == \
        [0x11, 0x22, 0x33, 0x99]
    with pytest.raises(EntryError) as err:
        dev.insert("MyIngress.t_const", {"hdr.t.a": (3, 0xFF)}, "MyIngress.set_const",
                   {"v": 1}, priority=1)
    assert err.value.code == "PERMISSION_DENIED"


def test_optional_match(device: Any) -> None:
    dev = device("tables")
    dev.insert("MyIngress.t_optional", {"hdr.t.a": 5}, "MyIngress.set_optional", {"v": 1},
               priority=1)
    dev.insert("MyIngress.t_optional", {"hdr.t.e": 3}, "MyIngress.set_optional", {"v": 2},
               priority=2)
    assert [outs(dev, a=a, e=e)["optional"] for a, e in ((5, 3), (5, 1), (6, 1), (6, 3))] == \
        [2, 1, 0, 2]


def test_switch_on_action_run(device: Any) -> None:
    dev = device("tables")
    dev.insert("MyIngress.t_switch", {"hdr.t.a": 1}, "MyIngress.mark_a")
    dev.insert("MyIngress.t_switch", {"hdr.t.a": 2}, "MyIngress.mark_b")
    assert [outs(dev, a=a)["switch"] for a in (1, 2, 3)] == [0x11, 0x22, 0]


def test_entry_validation_errors(device: Any) -> None:
    dev = device("tables")
    with pytest.raises(EntryError) as err:
        dev.insert("MyIngress.t_ternary", {"hdr.t.b": (1, 0xFF), "hdr.t.e": 1},
                   "MyIngress.set_ternary", {"v": 1}, priority=0)
    assert err.value.code == "INVALID_ARGUMENT" and "priority" in str(err.value)
    # the client refuses to build these two, so the entries are edited after building
    bits_outside = dev.entry("MyIngress.t_ternary", {"hdr.t.b": (0, 0xFF), "hdr.t.e": 1},
                             "MyIngress.set_ternary", {"v": 1}, priority=3)
    bits_outside.match[0].ternary.value = (0x100).to_bytes(2, "big")
    with pytest.raises(EntryError) as err:
        dev.insert_entry(bits_outside)
    assert "outside the mask" in str(err.value)
    wrong_action = dev.entry("MyIngress.t_exact", {"hdr.t.a": 1, "hdr.t.d": 1},
                             "MyIngress.set_exact", {"v": 1})
    wrong_action.action.action.action_id = dev.p4info.action("MyIngress.set_lpm").preamble.id
    with pytest.raises(EntryError) as err:
        dev.insert_entry(wrong_action)
    assert "not an action of table" in str(err.value)
