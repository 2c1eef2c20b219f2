"""The target's reach beyond our own program (handwritten.py), everywhere, without bmv2:
header stacks (next/last in the parser, push/pop, run-time indices, StackOutOfBounds), header
unions and union stacks, varbit fields (extract with a length, emit, checksum over them,
HeaderTooShort), const entries with bits outside their mask or prefix, error-typed keys
(const and over P4Runtime by name), an action the P4Info lists but the JSON omits, parser
value sets filled over P4Runtime (which bmv2's P4Runtime server does not implement).

The output digests were taken from runs that matched bmv2 byte for byte
(test_differential.py::test_handwritten_program_matches_bmv2); a change of behaviour shows
here even where bmv2 is not installed."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from emulation.targets.embedded.p4runtime_server import apply_updates, local_device
from emulation.targets.embedded.pipeline import Switch, load_program
from emulation.targets.embedded.tables import EntryError
from tests.embedded import handwritten as hw

# sha256 of every output (port, length, bytes) per frame of handwritten.frames(name)
MATCHED_BMV2 = {
    "stacks": "983a16499694cad5fac13a0bd7d7a97de992bfd1cf4ba729d3729efbfe5792ca",
    "unions": "31d59ccfa4a6cbedfe830b9936826bb9aadec523ceac87e5144cec899bea966b",
    "varbit": "e191fc0cda17bce60d24ceddd850095364be48d79c7d8b2a202414e626cd2c7a",
    "const_tables": "0cbf79e76ca05c3d0e05073dac9b39eefae6b31c859b318c7d3e899a0498111f",
    "value_set": "1f140fe624f9c498fa8536867b63a9c25ab7928980819b45913fe1ecf005880e",
}


# the same for the p4c-compiled programs (tests/embedded/p4/reach_*.p4) and compiled_frames
COMPILED_MATCHED_BMV2 = {
    "reach_stacks": "ea746ce80d51a72453f64d7d2b4e0d134e18e593722ed913dd9566ccab4f0e09",
    "reach_unions": "300018d7299988fce45b6a2edb77fae9dae71835c866561045366b6c4ac12ab8",
    "reach_varbit": "a555eac7ee3621d9cdd6124b752e461719fa7133a7de44bd79bc613acacbd7f4",
    "reach_tables": "7c83fc73498b293523f9b091c5bd87b5ca4d984c970f10595250135196ac5811",
}


def switch(name: str) -> Switch:
    return Switch(load_program(json.dumps(hw.PROGRAMS[name]())))


def out(sw: Switch, frame: bytes) -> bytes:
    (port, data), = sw.process(1, frame)
    assert port == 2
    return data


@pytest.mark.parametrize("name", sorted(hw.PROGRAMS))
def test_outputs_are_those_bmv2_gave(name: str) -> None:
    sw = switch(name)
    h = hashlib.sha256()
    for f in hw.frames(name):
        for port, data in sw.process(1, f):
            h.update(port.to_bytes(2, "big") + len(data).to_bytes(4, "big") + data)
        h.update(b"|")
    assert sw.drops["engine_error"] == 0
    assert h.hexdigest() == MATCHED_BMV2[name]


def test_stack_parsing_next_last_and_out_of_bounds() -> None:
    sw = switch("stacks")
    frame = hw.eth(0, 0x9000) + hw.tags(1, 2) + b"tail"
    assert out(sw, frame) == frame  # two tags parsed up to last.bos, re-emitted
    four = out(sw, hw.eth(0, 0x9000) + hw.tags(1, 2, 3, 4))
    assert four[12:14] == b"\x00\x03"  # StackOutOfBounds shown in the EtherType
    assert four[14:] == hw.tags(1, 2)[:2] + bytes([2, 0, 3, 0]) + bytes([4, 1])


def test_stack_push_pop_and_runtime_index() -> None:
    sw = switch("stacks")
    head = hw.eth(1, 0x9000)
    assert out(sw, head + hw.tags(1, 2))[14:] == bytes([0xAA, 0, 1, 0, 2, 1])  # push_front(1)
    assert out(sw, hw.eth(2, 0x9000) + hw.tags(1, 2) + b"t")[14:] == bytes([2, 1]) + b"t"
    dyn = hw.eth(3, 0x9000, src=0x0A0B0C0D0E01) + hw.tags(1, 2, 3)
    assert out(sw, dyn)[14:] == bytes([1, 0, 0x55, 0, 3, 1])  # tags[eth.src & 0xff].v
    assert out(sw, hw.eth(4, 0x9000) + hw.tags(1, 2))[6:12] == bytes([0, 0, 0, 0, 1, 2])
    # an index outside the stack: bmv2 aborts; the embedded target drops and counts it
    assert sw.process(1, hw.eth(3, 0x9000, src=7) + hw.tags(1)) == []
    assert sw.drops["engine_error"] == 1


def test_union_member_valid_invalidates_the_other() -> None:
    sw = switch("unions")
    a = hw.eth(1, 0xA) + b"\x12\x34"  # u.a extracted; op 1 sets u.b valid
    assert out(sw, a) == hw.eth(1, 0xA) + bytes([7, 9])
    assert out(sw, hw.eth(3, 0xB) + b"\x56\x78")[6:12] == bytes(5) + b"\x01"  # valid_union
    assert out(sw, hw.eth(3, 0x1))[6:12] == bytes(6)
    opts = hw.eth(0, 0xC) + bytes([1, 0]) + bytes([2, 1, 0xAB, 0xCD]) + b"t"
    assert out(sw, opts) == opts  # a union stack: p then q, by lookahead, until bos


def test_varbit_options_extract_emit_and_checksum() -> None:
    sw = switch("varbit")
    frame = hw.eth(0, 0x0800) + hw.ipv4(bytes(range(8)), ttl=9)
    want = hw.eth(0, 0x0800) + hw.ipv4(bytes(range(8)), ttl=8)
    assert out(sw, frame) == want  # options kept, TTL and checksum (over them) updated
    stripped = out(sw, hw.eth(1, 0x0800) + hw.ipv4(bytes(8), ttl=9))
    assert stripped[14] == 0x45 and stripped[34:] == b"udp-payl"  # options removed
    too_long = out(sw, hw.eth(0, 0x0800) + hw.ipv4(ihl=4) + bytes(60))
    assert too_long[12:14] == b"\x00\x04"  # (4 - 5) * 32 bits: more than 40 bytes
    assert sw.errors["parser_error.HeaderTooShort"] == 1


def test_const_entries_are_masked_as_bmv2_does() -> None:
    sw = switch("const_tables")
    h = out(sw, hw.frames("const_tables")[0])  # a = 0x12AB: key 0x12ff &&& 0xff00
    assert h[20:22] == b"\x01\x03"  # c by the ternary entry, d by 0x0a0b0c0d/8
    assert out(sw, hw.frames("const_tables")[1])[20:22] == b"\x01\x04"  # 0x0b0cffff/16
    assert out(sw, hw.eth(0, 0x88B5) + b"\x12")[12:14] == b"\xe0\x01"  # error key


def const_tables_device() -> Any:
    doc = hw.const_tables()
    return local_device(json.dumps(doc).encode(), hw.const_tables_p4info(doc))


def error_entry(name: bytes, action_id: int, params: list[bytes]) -> Any:
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = update.entity.table_entry
    te.table_id = 33600000
    te.match.add(field_id=1).exact.value = name
    te.action.action.action_id = action_id
    for i, p in enumerate(params):
        te.action.action.params.add(param_id=i + 1, value=p)
    return update


def test_error_key_written_by_name_and_absent_action_refused() -> None:
    sw, servicer = const_tables_device()  # the P4Info lists NoAction, the JSON does not
    apply_updates(servicer, error_entry(b"PacketTooShort", 16800000, [b"\x2a"]))
    short = hw.eth(0, 0x88B5) + b"\x12\x34\x00"
    assert sw.process(1, short)[0][1] == hw.eth(0, 0xE001) + b"\x12\x34\x00"
    good = sw.process(1, hw.frames("const_tables")[0])[0][1]
    assert good[21] == 3  # NoError: t_err_rt misses, d stays as t_lpm set it
    with pytest.raises(EntryError, match="'NoAction' is in the P4Info but p4c left it out"):
        apply_updates(servicer, error_entry(b"NoError", 16800001, []))
    with pytest.raises(EntryError, match="'Nope' is not an error of the program"):
        apply_updates(servicer, error_entry(b"Nope", 16800000, [b"\x01"]))
    read = p4runtime_pb2.ReadRequest()
    read.entities.add().table_entry.table_id = 33600000
    (resp,) = servicer.Read(read, None)
    assert resp.entities[0].table_entry.match[0].exact.value == b"PacketTooShort"


def value_set_update(*values: int) -> Any:
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    entry = update.entity.value_set_entry
    entry.value_set_id = 56000000
    for v in values:
        entry.members.add().match.add(field_id=1).exact.value = v.to_bytes(2, "big")
    return update


def test_value_set_members_written_over_p4runtime_steer_the_parser() -> None:
    sw, servicer = local_device(json.dumps(hw.value_set()).encode(), hw.value_set_p4info())
    apply_updates(servicer, value_set_update(0x1234, 0x0800))
    src = {t: out(sw, hw.eth(0, t) + b"\x56\x78tail")[6:12]
           for t in (0x0800, 0x1234, 0xF234, 0x88B5)}
    assert src[0x0800] == src[0x1234] == bytes(4) + b"\x56\x78"  # members: the tag parsed
    assert src[0xF234] == src[0x88B5] == hw.eth(0, 0)[6:12]  # masked match / no match
    read = p4runtime_pb2.ReadRequest()
    read.entities.add().value_set_entry.value_set_id = 0
    (resp,) = servicer.Read(read, None)
    members = resp.entities[0].value_set_entry.members
    assert [m.match[0].exact.value for m in members] == [b"\x12\x34", b"\x08\x00"]
    apply_updates(servicer, value_set_update())  # MODIFY with none empties it
    assert out(sw, hw.eth(0, 0x0800) + b"\x56\x78")[6:12] == hw.eth(0, 0)[6:12]
    with pytest.raises(EntryError, match="holds 4 members"):
        apply_updates(servicer, value_set_update(1, 2, 3, 4, 5))


@pytest.mark.parametrize("name", sorted(COMPILED_MATCHED_BMV2))
def test_p4c_compiled_reach_programs_give_bmv2_outputs(device: Any, name: str) -> None:
    dev = device(name)
    h = hashlib.sha256()
    for f in hw.compiled_frames(name):
        for port, data in dev.send(1, f):
            h.update(port.to_bytes(2, "big") + len(data).to_bytes(4, "big") + data)
        h.update(b"|")
    assert dev.switch.drops["engine_error"] == 0
    assert h.hexdigest() == COMPILED_MATCHED_BMV2[name]


def test_p4c_error_key_takes_entries_by_name(device: Any) -> None:
    """p4c gives the key of type error bitwidth 0 in the P4Info: bmv2 then refuses every
    entry ("does not fit within 0 bits"); this target takes the error's name."""
    dev = device("reach_tables")
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = update.entity.table_entry
    te.table_id = dev.p4info.table("MyIngress.t_err_rt").preamble.id
    te.match.add(field_id=1).exact.value = b"PacketTooShort"
    te.action.action.action_id = next(a.preamble.id for a in dev.p4info.proto.actions
                                      if a.preamble.name == "MyIngress.set_d")
    te.action.action.params.add(param_id=1, value=b"\x2a")
    dev.write(update)
    (match, _), = dev.program.tables["MyIngress.t_err_rt"].entries
    assert match == (1,)  # error.PacketTooShort
