"""Tables inside nested ``switch`` statements (handwritten.nested_switch, a v1model program
laid out as p4c's bmv2 back end does; also p4c's own build of it where tests/embedded/p4/build
has one): the pipeline loads although the P4Info lists a table p4c's mid end left out of the
JSON (it sits behind a branch constant folding rules out); the table applied in the inner
switch takes entries by its P4Info name and they take effect; the left-out one refuses
entries, as bmv2 does, and reads find nothing in it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from control_plane.drivers.p4runtime import P4Info
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from emulation.targets.embedded.p4rt.read import read_entity
from emulation.targets.embedded.tables import EntryError
from tests.embedded import handwritten as hw
from tests.embedded.conftest import BUILD, compiled

# the p4c build where it is committed, and hand-written JSON in p4c's layout (handwritten.py)
SOURCES = {"handwritten": lambda: (json.dumps(hw.nested_switch()).encode(),
                                   P4Info(hw.nested_switch_p4info()))}
if (BUILD / "nested_switch.json").exists():
    SOURCES["p4c"] = lambda: compiled("nested_switch")

DST, SRC = 0x020000000002, 0x020000000001


def eth(dst: int, src: int, etype: int = 0x0800) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big") + b"data"


@pytest.fixture(params=sorted(SOURCES))
def sw(device: Any, request: Any) -> Any:
    dev = device("nested_switch", SOURCES[request.param]())
    dev.insert("MyIngress.classify", {"hdr.eth.dst": DST}, "MyIngress.set_port", {"port": 3})
    return dev


def test_p4info_lists_the_table_the_json_leaves_out(sw: Any) -> None:
    assert "MyIngress.removed" in {t.preamble.name for t in sw.p4info.proto.tables}
    assert "MyIngress.removed" not in sw.program.tables
    assert {"MyIngress.classify", "MyIngress.inner"} <= set(sw.program.tables)


def test_entry_in_the_inner_switch_table_takes_effect(sw: Any) -> None:
    assert sw.send(1, eth(DST, SRC)) == [(3, eth(DST, SRC))]  # inner misses: NoAction
    sw.insert("MyIngress.inner", {"hdr.eth.src": SRC}, "MyIngress.set_type", {"type": 0x1234})
    assert sw.send(1, eth(DST, SRC)) == [(3, eth(0xFFFFFFFFFFFF, SRC, 0x1234))]
    assert sw.send(1, eth(DST, SRC + 1)) == [(3, eth(DST, SRC + 1))]
    assert sw.send(1, eth(DST + 1, SRC)) == []  # classify misses: drop


def test_left_out_table_refuses_entries_and_reads_empty(sw: Any) -> None:
    with pytest.raises(EntryError, match="MyIngress.removed.*left it out of the JSON") as exc:
        sw.insert("MyIngress.removed", {"hdr.eth.type": 0x0800}, "MyIngress.set_type",
                  {"type": 1})
    assert exc.value.code == "INVALID_ARGUMENT"
    state = sw.servicer.state
    everything = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())
    entries = list(read_entity(state.switch.pre, state.map, everything))
    assert [e.table_entry.table_id for e in entries] == \
        [sw.p4info.table("MyIngress.classify").preamble.id]
    removed = sw.p4info.table("MyIngress.removed").preamble.id
    one = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=removed))
    assert list(read_entity(state.switch.pre, state.map, one)) == []


def test_direct_counter_of_the_left_out_table_does_not_stop_the_load(device: Any) -> None:
    info = hw.nested_switch_p4info()
    removed = next(t for t in info.tables if t.preamble.name == "MyIngress.removed")
    counter = info.direct_counters.add(direct_table_id=removed.preamble.id)
    counter.preamble.id, counter.preamble.name = 0x14000001, "MyIngress.removed_hits"
    dev = device("nested_switch", (json.dumps(hw.nested_switch()).encode(), P4Info(info)))
    assert dev.servicer.state.map.direct_counters == {}
