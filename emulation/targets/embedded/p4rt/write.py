"""Write: table entries (default action included), PRE entries, counters, registers, parser
value sets.

Only CONTINUE_ON_ERROR atomicity: every update is tried and answered on its own.
"""

from __future__ import annotations

from typing import Any

import grpc

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from emulation.targets.embedded.p4info_map import P4InfoMap
from emulation.targets.embedded.p4rt.state import ServerState
from emulation.targets.embedded.p4rt.status import abort_write, update_error
from emulation.targets.embedded.p4rt.values import (
    binding,
    cells,
    decode_action,
    decode_match,
    to_int,
)
from emulation.targets.embedded.pre import CloneSession, ReplicationEngine
from emulation.targets.embedded.tables import Entry, EntryError

U = p4runtime_pb2.Update


def write(state: ServerState, request: Any, context: grpc.ServicerContext) -> Any:
    state.check_writer(request, context)
    pmap = state.need_pipeline(context)
    if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
        context.abort(grpc.StatusCode.UNIMPLEMENTED,
                      "only CONTINUE_ON_ERROR atomicity is supported")
    errors: list[p4runtime_pb2.Error] = []
    failed = False
    with state.lock:
        for update in request.updates:
            try:
                apply_update(state, pmap, update)
                errors.append(update_error(None))
            except EntryError as exc:
                failed = True
                errors.append(update_error(exc))
    if failed:
        abort_write(context, errors)
    return p4runtime_pb2.WriteResponse()


def apply_update(state: ServerState, pmap: P4InfoMap, update: Any) -> None:
    """One update; a refusal raises EntryError and leaves the entity as it was."""
    entity = update.entity
    kind = entity.WhichOneof("entity")
    if update.type == U.UNSPECIFIED:
        raise EntryError("INVALID_ARGUMENT", "update type is UNSPECIFIED")
    if kind == "table_entry":
        write_table_entry(pmap, update.type, entity.table_entry)
    elif kind == "packet_replication_engine_entry":
        write_pre(state.switch.pre, update.type, entity.packet_replication_engine_entry)
    elif kind == "counter_entry":
        write_counter(pmap, update.type, entity.counter_entry)
    elif kind == "direct_counter_entry":
        write_direct_counter(pmap, update.type, entity.direct_counter_entry)
    elif kind == "register_entry":
        write_register(pmap, update.type, entity.register_entry)
    elif kind == "value_set_entry":
        write_value_set(pmap, update.type, entity.value_set_entry)
    else:
        raise EntryError("UNIMPLEMENTED", f"entity {kind!r} is not supported")


def write_table_entry(pmap: P4InfoMap, utype: int, te: Any) -> None:
    b = binding(pmap, te.table_id)
    table = b.table
    if te.is_default_action:
        if utype != U.MODIFY:
            raise EntryError("INVALID_ARGUMENT", "the default entry can only be MODIFY'd")
        if len(te.match):
            raise EntryError("INVALID_ARGUMENT", "a default entry has no match")
        if te.HasField("action"):
            table.set_default(*decode_action(pmap, b, te))
        else:
            if table.default_const:
                raise EntryError("PERMISSION_DENIED", "default action is const")
            table.reset_default()
        return
    if te.HasField("time_since_last_hit") or te.idle_timeout_ns:
        raise EntryError("UNIMPLEMENTED", "idle timeouts are not supported")
    match = decode_match(b, te)
    if not table.needs_priority and te.priority:
        raise EntryError("INVALID_ARGUMENT", f"table {table.name!r} takes no priority")
    if utype == U.INSERT:
        act, data = decode_action(pmap, b, te)
        entry = Entry(match, te.priority, act, data)
        table.insert(entry)
        if te.HasField("counter_data"):
            entry.packets, entry.bytes = (te.counter_data.packet_count,
                                          te.counter_data.byte_count)
    elif utype == U.MODIFY:
        table.modify(match, te.priority, *decode_action(pmap, b, te))
    else:
        table.delete(match, te.priority)


def check_presence(utype: int, exists: bool, what: str) -> None:
    """INSERT needs ``what`` absent, MODIFY and DELETE need it present."""
    if utype == U.INSERT and exists:
        raise EntryError("ALREADY_EXISTS", f"{what} exists")
    if utype in (U.MODIFY, U.DELETE) and not exists:
        raise EntryError("NOT_FOUND", f"{what} does not exist")


def write_pre(pre: ReplicationEngine, utype: int, pre_entry: Any) -> None:
    which = pre_entry.WhichOneof("type")
    if which == "multicast_group_entry":
        g = pre_entry.multicast_group_entry
        if g.multicast_group_id == 0:
            raise EntryError("INVALID_ARGUMENT", "multicast_group_id 0 is reserved")
        replicas = [(r.egress_port, r.instance) for r in g.replicas]
        if len(set(replicas)) != len(replicas):
            raise EntryError("INVALID_ARGUMENT", "duplicate replica in multicast group")
        check_presence(utype, g.multicast_group_id in pre.groups,
                       f"group {g.multicast_group_id}")
        if utype == U.DELETE:
            pre.delete_group(g.multicast_group_id)
        else:
            pre.set_group(g.multicast_group_id, replicas)
    elif which == "clone_session_entry":
        c = pre_entry.clone_session_entry
        if c.session_id == 0:
            raise EntryError("INVALID_ARGUMENT", "clone session id 0 is reserved")
        check_presence(utype, c.session_id in pre.clones, f"clone session {c.session_id}")
        if utype == U.DELETE:
            del pre.clones[c.session_id]
        else:
            pre.clones[c.session_id] = CloneSession(
                c.session_id, [(r.egress_port, r.instance) for r in c.replicas],
                c.class_of_service, c.packet_length_bytes)
    else:
        raise EntryError("INVALID_ARGUMENT", "empty packet_replication_engine_entry")


def write_counter(pmap: P4InfoMap, utype: int, ce: Any) -> None:
    if utype != U.MODIFY:
        raise EntryError("INVALID_ARGUMENT", "counter entries can only be MODIFY'd")
    for _, arr, i in cells(pmap.counters, [ce.counter_id], ce, "counter"):
        arr.packets[i] = ce.data.packet_count
        arr.bytes[i] = ce.data.byte_count


def write_direct_counter(pmap: P4InfoMap, utype: int, dce: Any) -> None:
    if utype != U.MODIFY:
        raise EntryError("INVALID_ARGUMENT", "direct counter entries can only be MODIFY'd")
    b = binding(pmap, dce.table_entry.table_id)
    entry = b.table.find(decode_match(b, dce.table_entry), dce.table_entry.priority)
    entry.packets, entry.bytes = dce.data.packet_count, dce.data.byte_count


def write_register(pmap: P4InfoMap, utype: int, re: Any) -> None:
    if utype != U.MODIFY:
        raise EntryError("INVALID_ARGUMENT", "register entries can only be MODIFY'd")
    if re.data.WhichOneof("data") != "bitstring":
        raise EntryError("INVALID_ARGUMENT", "register data must be a bitstring")
    for _, arr, i in cells(pmap.registers, [re.register_id], re, "register"):
        arr.values[i] = to_int(re.data.bitstring, arr.bitwidth, f"register {arr.name!r}")


def write_value_set(pmap: P4InfoMap, utype: int, entry: Any) -> None:
    """MODIFY replaces a parser value set's members (the spec allows nothing else)."""
    if utype != U.MODIFY:
        raise EntryError("INVALID_ARGUMENT", "a value set entry can only be MODIFY'd")
    found = pmap.value_sets.get(entry.value_set_id)
    if found is None:
        raise EntryError("NOT_FOUND", f"unknown value set id {entry.value_set_id}")
    vs, widths = found
    if len(entry.members) > vs.size:
        raise EntryError("RESOURCE_EXHAUSTED", f"value set {vs.name!r} holds {vs.size} members")
    members = []
    for member in entry.members:
        if [fm.field_id for fm in member.match] != list(range(1, len(widths) + 1)):
            raise EntryError("INVALID_ARGUMENT", f"value set {vs.name!r}: a member needs "
                                                 f"fields 1..{len(widths)} in order")
        fields = []
        for fm, width in zip(member.match, widths, strict=True):
            if fm.WhichOneof("field_match_type") != "exact":
                raise EntryError("UNIMPLEMENTED", f"value set {vs.name!r}: only exact "
                                                  "members are supported")
            fields.append((to_int(fm.exact.value, width, f"value set {vs.name!r}"),
                           (1 << width) - 1))
        members.append(tuple(fields))
    vs.replace(members)
