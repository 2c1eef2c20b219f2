"""Read: table entries (default entries and direct counters too), PRE entries, counters,
registers (bmv2 cannot read registers over P4Runtime; this target can) and parser value sets."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from emulation.targets.embedded.p4info_map import P4InfoMap, TableBinding
from emulation.targets.embedded.p4rt.state import ServerState
from emulation.targets.embedded.p4rt.status import abort_entry
from emulation.targets.embedded.p4rt.values import (
    all_or_one,
    binding,
    cells,
    decode_match,
    encode_action,
    encode_match,
    to_bytes,
)
from emulation.targets.embedded.pre import ReplicationEngine
from emulation.targets.embedded.tables import Entry, EntryError


def read(state: ServerState, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
    """One response with every entity found, read under the switch lock (a consistent view)."""
    state.check_device(request.device_id, context)
    pmap = state.need_pipeline(context)
    resp = p4runtime_pb2.ReadResponse()
    try:
        with state.lock:
            for entity in request.entities:
                for found in read_entity(state.switch.pre, pmap, entity):
                    resp.entities.add().CopyFrom(found)
    except EntryError as exc:
        abort_entry(context, exc)
    yield resp


def read_entity(pre: ReplicationEngine, pmap: P4InfoMap, entity: Any) -> Iterator[Any]:
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        yield from read_tables(pmap, entity.table_entry)
    elif kind == "packet_replication_engine_entry":
        yield from read_pre(pre, entity.packet_replication_engine_entry)
    elif kind == "counter_entry":
        ce = entity.counter_entry
        yield from read_cells(pmap.counters, ce.counter_id, ce, "counter", counter_cell)
    elif kind == "direct_counter_entry":
        te = entity.direct_counter_entry.table_entry
        for e in read_tables(pmap, te, with_counters=True):
            out = p4runtime_pb2.Entity()
            out.direct_counter_entry.table_entry.CopyFrom(e.table_entry)
            out.direct_counter_entry.table_entry.ClearField("counter_data")
            out.direct_counter_entry.data.CopyFrom(e.table_entry.counter_data)
            yield out
    elif kind == "register_entry":
        re = entity.register_entry
        yield from read_cells(pmap.registers, re.register_id, re, "register", register_cell)
    elif kind == "value_set_entry":
        for vid in all_or_one(entity.value_set_entry.value_set_id, pmap.value_sets):
            if vid not in pmap.value_sets:
                raise EntryError("NOT_FOUND", f"unknown value set id {vid}")
            out = p4runtime_pb2.Entity()
            out.value_set_entry.value_set_id = vid
            for member in pmap.value_sets[vid][0].members:
                m = out.value_set_entry.members.add()
                for i, (value, _) in enumerate(member):
                    m.match.add(field_id=i + 1).exact.value = to_bytes(value)
            yield out
    else:
        raise EntryError("UNIMPLEMENTED", f"reading {kind!r} is not supported")


def read_tables(pmap: P4InfoMap, te: Any, with_counters: bool = False) -> Iterator[Any]:
    """Entries of one table (or all, table id 0), narrowed to one match when one is given."""
    want_counters = with_counters or te.HasField("counter_data")
    for tid in all_or_one(te.table_id, pmap.tables):
        if tid in pmap.absent_tables:
            continue  # left out of the JSON: it holds no entries
        b = binding(pmap, tid)
        if te.is_default_action:
            yield default_entity(pmap, b)
            continue
        wanted = None
        if len(te.match):
            wanted = (decode_match(b, te), te.priority)
        for entry in list(b.table.entries.values()):
            if wanted is not None and b.table.identity(*wanted) != b.table.identity(
                    entry.match, entry.priority):
                continue
            yield entry_entity(pmap, b, entry, want_counters)


def default_entity(pmap: P4InfoMap, b: TableBinding) -> Any:
    out = p4runtime_pb2.Entity()
    t = out.table_entry
    t.table_id = b.info.preamble.id
    t.is_default_action = True
    if b.table.default_action is not None:
        encode_action(pmap, t.action, b.table.default_action, b.table.default_data)
    return out


def entry_entity(pmap: P4InfoMap, b: TableBinding, entry: Entry, counters: bool) -> Any:
    out = p4runtime_pb2.Entity()
    t = out.table_entry
    t.table_id = b.info.preamble.id
    encode_match(b, entry, t)
    if b.table.needs_priority:
        t.priority = entry.priority
    encode_action(pmap, t.action, entry.action, entry.data)
    if counters and b.table.with_counters:
        t.counter_data.packet_count = entry.packets
        t.counter_data.byte_count = entry.bytes
    return out


def read_pre(pre: ReplicationEngine, pre_entry: Any) -> Iterator[Any]:
    which = pre_entry.WhichOneof("type")
    if which == "multicast_group_entry":
        for g in all_or_one(pre_entry.multicast_group_entry.multicast_group_id,
                            sorted(pre.groups)):
            if g not in pre.groups:
                raise EntryError("NOT_FOUND", f"group {g} does not exist")
            out = p4runtime_pb2.Entity()
            mg = out.packet_replication_engine_entry.multicast_group_entry
            mg.multicast_group_id = g
            for port, rid in pre.groups[g]:
                mg.replicas.add(egress_port=port, instance=rid)
            yield out
    elif which == "clone_session_entry":
        for s in all_or_one(pre_entry.clone_session_entry.session_id, sorted(pre.clones)):
            if s not in pre.clones:
                raise EntryError("NOT_FOUND", f"clone session {s} does not exist")
            c = pre.clones[s]
            out = p4runtime_pb2.Entity()
            ce = out.packet_replication_engine_entry.clone_session_entry
            ce.session_id, ce.class_of_service = s, c.class_of_service
            ce.packet_length_bytes = c.packet_length_bytes
            for port, rid in c.replicas:
                ce.replicas.add(egress_port=port, instance=rid)
            yield out
    else:
        raise EntryError("INVALID_ARGUMENT", "empty packet_replication_engine_entry")


def read_cells(arrays: dict[int, Any], given: int, entry: Any, kind: str,
               fill: Callable[[Any, int, Any, int], None]) -> Iterator[Any]:
    """One entity per counter/register cell the entry addresses, filled by ``fill``."""
    for aid, arr, i in cells(arrays, all_or_one(given, arrays), entry, kind):
        out = p4runtime_pb2.Entity()
        fill(out, aid, arr, i)
        yield out


def counter_cell(out: Any, cid: int, arr: Any, i: int) -> None:
    c = out.counter_entry
    c.counter_id, c.index.index = cid, i
    c.data.packet_count, c.data.byte_count = arr.packets[i], arr.bytes[i]


def register_cell(out: Any, rid: int, arr: Any, i: int) -> None:
    r = out.register_entry
    r.register_id, r.index.index = rid, i
    r.data.bitstring = to_bytes(arr.values[i])
