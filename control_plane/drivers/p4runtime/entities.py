"""Builders of P4Runtime entities (table entries, defaults, multicast groups, clone sessions)
from P4Info names.  Module functions, so the embedded target's in-process device can apply
exactly what a client would send."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from control_plane.drivers.p4runtime.p4info import P4Info
from control_plane.drivers.p4runtime.values import (
    P4RuntimeError,
    Value,
    decode_value,
    encode_value,
    parse_text_value,
)
from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2

# ---------------------------------------------------------------------------------------------
# entries

__all__ = ["CounterValue", "Replicas", "build_default_entry", "build_table_entry",
           "clone_session_update", "encode_update", "encode_write_request",
           "multicast_group_update", "table_update"]


@dataclass(frozen=True)
class CounterValue:
    packets: int
    bytes: int


def build_table_entry(info: P4Info, table_name: str, match: Mapping[str, object],
                      action_name: str | None = None, params: Mapping[str, Value] | None = None,
                      priority: int = 0) -> p4runtime_pb2.TableEntry:
    """Build a TableEntry from names.  Match values by kind:

    exact: value; lpm: "a.b.c.d/len" or (value, prefix_len); ternary: (value, mask);
    range: (low, high); optional: value.  ``action_name`` may be omitted for a delete.
    """
    table = info.table(table_name)
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id, priority=priority)
    needed = {f.name for f in table.match_fields if f.match_type == p4info_pb2.MatchField.EXACT}
    missing = needed - set(match)
    if missing:
        raise P4RuntimeError(
            f"table '{table_name}': exact match field(s) {', '.join(sorted(missing))} missing"
        )
    for name, raw in match.items():
        field = info.match_field(table, name)
        entry.match.append(_field_match(table_name, field, raw))
    if action_name is not None:
        _set_action(info, table, entry, action_name, params, default=False)
    return entry


def build_default_entry(info: P4Info, table_name: str, action_name: str | None = None,
                        params: Mapping[str, Value] | None = None) -> p4runtime_pb2.TableEntry:
    """The default-action entry of a table (write it with MODIFY).  Without an action it
    resets the table's default to the program's own (P4Runtime spec 9.1.1)."""
    table = info.table(table_name)
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id, is_default_action=True)
    if action_name is not None:
        _set_action(info, table, entry, action_name, params, default=True)
    return entry


def _set_action(info: P4Info, table: p4info_pb2.Table, entry: p4runtime_pb2.TableEntry,
                action_name: str, params: Mapping[str, Value] | None, default: bool) -> None:
    table_name = table.preamble.name
    action = info.action(action_name)
    info.table_allows_action(table, action, default)
    params = dict(params or {})
    declared = [p.name for p in action.params]
    missing = [p for p in declared if p not in params]
    if missing:
        raise P4RuntimeError(
            f"action '{action_name}' in table '{table_name}': parameter(s) "
            f"{', '.join(missing)} missing"
        )
    entry.action.action.action_id = action.preamble.id
    for name, raw in params.items():
        param = info.action_param(action, name)
        entry.action.action.params.add(
            param_id=param.id,
            value=encode_value(raw, param.bitwidth, f"{table_name}/{action_name}.{name}"),
        )


def _field_match(table_name: str, field: p4info_pb2.MatchField, raw: object):
    what = f"table '{table_name}' field '{field.name}'"
    fm = p4runtime_pb2.FieldMatch(field_id=field.id)
    kind = field.match_type
    if kind == p4info_pb2.MatchField.EXACT:
        fm.exact.value = encode_value(raw, field.bitwidth, what)  # type: ignore[arg-type]
    elif kind == p4info_pb2.MatchField.LPM:
        if isinstance(raw, str) and "/" in raw:
            addr, _, plen = raw.partition("/")
            value, prefix = parse_text_value(addr, what), int(plen)
        elif isinstance(raw, tuple) and len(raw) == 2:
            value, prefix = raw[0], int(raw[1])
            value = parse_text_value(value, what) if isinstance(value, str) else value
        else:
            value, prefix = raw, field.bitwidth
        if not 0 <= prefix <= field.bitwidth:
            raise P4RuntimeError(f"{what}: prefix length {prefix} not in 0..{field.bitwidth}")
        if prefix == 0:
            raise P4RuntimeError(f"{what}: a /0 prefix is a wildcard; set the default instead")
        number = decode_value(encode_value(value, field.bitwidth, what))  # type: ignore[arg-type]
        mask = ((1 << prefix) - 1) << (field.bitwidth - prefix)
        fm.lpm.value = encode_value(number & mask, field.bitwidth, what)
        fm.lpm.prefix_len = prefix
    elif kind == p4info_pb2.MatchField.TERNARY:
        if not (isinstance(raw, tuple) and len(raw) == 2):
            raise P4RuntimeError(f"{what}: ternary match needs (value, mask)")
        mask = decode_value(encode_value(raw[1], field.bitwidth, what))
        value = decode_value(encode_value(raw[0], field.bitwidth, what))
        fm.ternary.value = encode_value(value & mask, field.bitwidth, what)
        fm.ternary.mask = encode_value(mask, field.bitwidth, what)
    elif kind == p4info_pb2.MatchField.RANGE:
        if not (isinstance(raw, tuple) and len(raw) == 2):
            raise P4RuntimeError(f"{what}: range match needs (low, high)")
        low, high = (encode_value(v, field.bitwidth, what) for v in raw)
        if decode_value(low) > decode_value(high):
            raise P4RuntimeError(f"{what}: range low {raw[0]!r} is above high {raw[1]!r}")
        fm.range.low, fm.range.high = low, high
    elif kind == p4info_pb2.MatchField.OPTIONAL:
        fm.optional.value = encode_value(raw, field.bitwidth, what)  # type: ignore[arg-type]
    else:
        raise P4RuntimeError(f"{what}: match kind {kind} is not supported by this client")
    return fm


# ---------------------------------------------------------------------------------------------
# updates


Replicas = Sequence[tuple[int, int]]


def table_update(entry: p4runtime_pb2.TableEntry,
                 kind: int = p4runtime_pb2.Update.INSERT) -> p4runtime_pb2.Update:
    update = p4runtime_pb2.Update(type=kind)
    update.entity.table_entry.CopyFrom(entry)
    return update


def _pre_update(kind: int, entry: str, id_field: str, entry_id: int,
                replicas: Replicas) -> p4runtime_pb2.Update:
    """An Update of one PRE entry (``entry`` names the oneof field) with its replicas."""
    update = p4runtime_pb2.Update(type=kind)
    pre = getattr(update.entity.packet_replication_engine_entry, entry)
    setattr(pre, id_field, entry_id)
    for port, rid in replicas:
        pre.replicas.add(egress_port=port, instance=rid)
    return update


def multicast_group_update(group_id: int, replicas: Replicas,
                           kind: int = p4runtime_pb2.Update.INSERT) -> p4runtime_pb2.Update:
    """PRE multicast group: replicas are (egress port, instance = egress_rid) pairs."""
    if not 0 < group_id < 1 << 16:
        raise P4RuntimeError(f"multicast group id {group_id}: expected 1..65535")
    return _pre_update(kind, "multicast_group_entry", "multicast_group_id", group_id, replicas)


def clone_session_update(session_id: int, replicas: Replicas,
                         kind: int = p4runtime_pb2.Update.INSERT) -> p4runtime_pb2.Update:
    """PRE clone session (v1model ``clone(type, session)``): (egress port, instance) pairs."""
    if session_id <= 0:
        raise P4RuntimeError(f"clone session id {session_id}: expected a positive id")
    return _pre_update(kind, "clone_session_entry", "session_id", session_id, replicas)


# ---------------------------------------------------------------------------------------------
# encoded updates


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_delimited(field: int, data: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2): tag, length, bytes."""
    return _varint(field << 3 | 2) + _varint(len(data)) + data


_UPDATE_FIELDS = p4runtime_pb2.Update.DESCRIPTOR.fields_by_name


def encode_update(kind: int, entity: bytes) -> bytes:
    """A serialized p4.v1.Update (its type, a varint, and its entity) around a serialized
    Entity, for ``P4RuntimeClient.write_encoded``."""
    return (_varint(_UPDATE_FIELDS["type"].number << 3) + _varint(kind)
            + _length_delimited(_UPDATE_FIELDS["entity"].number, entity))


def encode_write_request(device_id: int, election_id: p4runtime_pb2.Uint128,
                         updates: Sequence[bytes]) -> bytes:
    """A serialized WriteRequest: its header fields, then each encoded Update as one more
    ``updates`` field (protobuf parses concatenated fields as one message)."""
    head = p4runtime_pb2.WriteRequest(device_id=device_id, election_id=election_id)
    number = p4runtime_pb2.WriteRequest.DESCRIPTOR.fields_by_name["updates"].number
    return head.SerializeToString() + b"".join(_length_delimited(number, u) for u in updates)
