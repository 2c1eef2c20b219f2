"""P4Runtime values and addresses <-> the engine's entries, actions and array cells.

One place decodes what a client sends (bytestrings, match fields, action calls, counter and
register indices) and encodes what Read answers, so Write and Read agree on every rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from emulation.targets.embedded.actions import Action
from emulation.targets.embedded.p4info_map import P4InfoMap, TableBinding
from emulation.targets.embedded.tables import Entry, EntryError


def to_int(data: bytes, bits: int, what: str) -> int:
    """Decode a P4Runtime bytestring, checking it fits ``bits``."""
    value = int.from_bytes(data, "big")
    if not data:
        raise EntryError("INVALID_ARGUMENT", f"{what}: empty bytestring")
    if value >> bits:
        raise EntryError("OUT_OF_RANGE", f"{what}: value {value:#x} does not fit {bits} bits")
    return value


def to_bytes(value: int) -> bytes:
    """Canonical bytestring (no leading zero bytes, at least one byte)."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def key_value(b: TableBinding, pos: int, data: bytes, bits: int, what: str) -> int:
    """A match field's value: a bytestring, or for a field of type error the error's name."""
    if pos not in b.error_fields:
        return to_int(data, bits, what)
    name = data.decode("utf-8", "replace")
    if name not in b.errors:
        raise EntryError("INVALID_ARGUMENT", f"{what}: {name!r} is not an error of the program "
                                             f"(known: {sorted(b.errors)})")
    return b.errors[name]


def key_bytes(b: TableBinding, pos: int, value: int) -> bytes:
    """Inverse of key_value."""
    if pos not in b.error_fields:
        return to_bytes(value)
    names = {code: name for name, code in b.errors.items()}
    return names.get(value, str(value)).encode()


def binding(pmap: P4InfoMap, table_id: int) -> TableBinding:
    b = pmap.tables.get(table_id)
    if b is None:
        if table_id in pmap.absent_tables:
            raise EntryError("INVALID_ARGUMENT", f"table {pmap.absent_tables[table_id]!r} is in "
                                                 "the P4Info but p4c left it out of the JSON "
                                                 "(no path of the program applies it): no entry "
                                                 "can go to it (bmv2 refuses it too)")
        raise EntryError("NOT_FOUND", f"unknown table id {table_id}")
    return b


def decode_match(b: TableBinding, te: Any) -> tuple[Any, ...]:
    """A TableEntry's match fields as the table's normalized key (omitted = wildcard)."""
    given = {}
    for fm in te.match:
        if fm.field_id not in b.field_ids:
            raise EntryError("INVALID_ARGUMENT", f"table {b.table.name!r}: unknown match "
                                                 f"field id {fm.field_id}")
        if fm.field_id in given:
            raise EntryError("INVALID_ARGUMENT", f"match field id {fm.field_id} repeated")
        given[fm.field_id] = fm
    match: list[Any] = []
    for pos, (fid, kind, kf) in enumerate(zip(b.field_ids, b.field_types, b.table.keys,
                                              strict=True)):
        fm = given.get(fid)
        what = f"table {b.table.name!r} field {kf.name!r}"
        full = (1 << kf.width) - 1
        if fm is None:
            if kind == "exact":
                raise EntryError("INVALID_ARGUMENT", f"{what}: exact match is required")
            match.append({"lpm": (0, 0), "ternary": (0, 0), "optional": (0, 0),
                          "range": (0, full)}[kind])
            continue
        got = fm.WhichOneof("field_match_type")
        if got != kind:
            raise EntryError("INVALID_ARGUMENT", f"{what}: expected {kind} match, got {got}")
        w = kf.width
        if kind == "exact":
            match.append(key_value(b, pos, fm.exact.value, w, what))
        elif kind == "lpm":
            match.append((to_int(fm.lpm.value, w, what), fm.lpm.prefix_len))
        elif kind == "ternary":
            match.append((key_value(b, pos, fm.ternary.value, w, what),
                          to_int(fm.ternary.mask, w, what)))
        elif kind == "optional":
            match.append((key_value(b, pos, fm.optional.value, w, what), full))
        else:
            match.append((to_int(fm.range.low, w, what), to_int(fm.range.high, w, what)))
    return b.table.normalize(tuple(match))


def encode_match(b: TableBinding, entry: Entry, t: Any) -> None:
    """Fill TableEntry ``t``'s match fields; wildcards are omitted, as the spec requires."""
    for pos, (fid, kind, kf, m) in enumerate(zip(b.field_ids, b.field_types, b.table.keys,
                                                 entry.match, strict=True)):
        full = (1 << kf.width) - 1
        if kind == "exact":
            t.match.add(field_id=fid).exact.value = key_bytes(b, pos, m)
        elif kind == "lpm":
            if m[1]:
                fm = t.match.add(field_id=fid)
                fm.lpm.value, fm.lpm.prefix_len = to_bytes(m[0]), m[1]
        elif kind == "ternary":
            if m[1]:
                fm = t.match.add(field_id=fid)
                fm.ternary.value, fm.ternary.mask = key_bytes(b, pos, m[0]), to_bytes(m[1])
        elif kind == "optional":
            if m[1]:
                t.match.add(field_id=fid).optional.value = key_bytes(b, pos, m[0])
        elif m != (0, full):
            fm = t.match.add(field_id=fid)
            fm.range.low, fm.range.high = to_bytes(m[0]), to_bytes(m[1])


def decode_action(pmap: P4InfoMap, b: TableBinding, te: Any) -> tuple[Action, tuple]:
    """A TableEntry's action call as (action of this table, parameter values)."""
    which = te.action.WhichOneof("type")
    if which != "action":
        raise EntryError("UNIMPLEMENTED" if which else "INVALID_ARGUMENT",
                         f"table {b.table.name!r}: a direct action is required")
    a = te.action.action
    if a.action_id in pmap.absent_actions:
        raise EntryError("INVALID_ARGUMENT", f"action {pmap.absent_actions[a.action_id]!r} is in "
                                             "the P4Info but p4c left it out of the JSON: no "
                                             "entry can use it (bmv2 refuses it too)")
    act = pmap.actions.get(a.action_id)
    if act is None:
        raise EntryError("NOT_FOUND", f"unknown action id {a.action_id}")
    act = b.table.actions.get(act.name)
    if act is None:
        raise EntryError("INVALID_ARGUMENT", f"action id {a.action_id} is not an action of "
                                             f"table {b.table.name!r}")
    params = {p.param_id: p.value for p in a.params}
    info = pmap.action_infos[a.action_id]
    if set(params) != {p.id for p in info.params} or len(a.params) != len(info.params):
        raise EntryError("INVALID_ARGUMENT", f"action {act.name!r}: expected parameters "
                                             f"{[p.name for p in info.params]}")
    data = tuple(to_int(params[p.id], p.bitwidth, f"action {act.name!r} param {p.name!r}")
                 for p in info.params)
    return act, data


def encode_action(pmap: P4InfoMap, msg: Any, act: Action, data: tuple) -> None:
    """Fill TableAction ``msg`` with an action call (parameter ids are 1-based positions)."""
    msg.action.action_id = pmap.action_ids.get(act.name, 0)
    for i, v in enumerate(data):
        p = msg.action.params.add()
        p.param_id = i + 1
        p.value = to_bytes(v)


def cells(arrays: dict[int, Any], ids: list[int], entry: Any, kind: str
          ) -> Iterator[tuple[int, Any, int]]:
    """(array id, array, index) of every cell a counter/register entry addresses: the given
    arrays, at the entry's index or, without one, at every index."""
    for aid in ids:
        arr = arrays.get(aid)
        if arr is None:
            raise EntryError("NOT_FOUND", f"unknown {kind} id {aid}")
        indices = [entry.index.index] if entry.HasField("index") else range(arr.size)
        for i in indices:
            if not 0 <= i < arr.size:
                raise EntryError("OUT_OF_RANGE", f"{kind} {arr.name!r} index {i} >= {arr.size}")
            yield aid, arr, i


def all_or_one(given: int, ids: Iterable[int]) -> list[int]:
    """The ids a Read addresses: ``given``, or all of ``ids`` when it is 0 (the wildcard)."""
    return [given] if given else list(ids)
