"""What a plan puts on one switch and what a switch holds, in one comparable form.

Install, verify and uninstall (control_plane/deploy/transaction.py) all work on ``Item``s: one
table entry or multicast group with a key (what P4Runtime identifies it by: table, match,
priority / group id) and a value (action and parameters / replicas).  Keys and values are
built from integers, not bytestrings, so a server that pads its values compares equal to one
that sends canonical ones, and replicas compare as a set (bmv2 returns them in its own order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from control_plane.deploy.entries import SwitchEntries
from control_plane.drivers.p4runtime import (
    P4Info,
    P4RuntimeClient,
    P4RuntimeError,
    build_table_entry,
    decode_value,
    format_value,
    multicast_group_update,
)
from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2

Key = tuple
GROUP = "multicast group"


class StateError(ValueError):
    """A plan entry cannot be built for this P4Info; the message names the entry."""


@dataclass(frozen=True)
class Item:
    """One table entry or multicast group: its identity, its contents and how to write it."""

    key: Key
    value: tuple
    entity: p4runtime_pb2.Entity = field(compare=False)
    what: str = field(compare=False)  # for messages: names, values and (plan items) why

    @property
    def is_group(self) -> bool:
        return self.key[0] == GROUP

    @cached_property
    def encoded(self) -> bytes:
        """The serialized entity, made once (see P4RuntimeClient.write_encoded)."""
        return self.entity.SerializeToString()


def _match_key(fm: p4runtime_pb2.FieldMatch) -> tuple:
    kind = fm.WhichOneof("field_match_type")
    m = getattr(fm, kind)
    if kind == "lpm":
        return (fm.field_id, kind, decode_value(m.value), m.prefix_len)
    if kind == "ternary":
        return (fm.field_id, kind, decode_value(m.value), decode_value(m.mask))
    if kind == "range":
        return (fm.field_id, kind, decode_value(m.low), decode_value(m.high))
    if kind in ("exact", "optional"):
        return (fm.field_id, kind, decode_value(m.value))
    return (fm.field_id, kind, m.SerializeToString(deterministic=True))


def table_item(info: P4Info, te: p4runtime_pb2.TableEntry, what: str | None = None) -> Item:
    """An Item for a table entry (as built for a plan, or as read from a switch)."""
    entity = p4runtime_pb2.Entity()  # only what identifies and defines it (no counters...)
    clean = entity.table_entry
    clean.table_id, clean.priority = te.table_id, te.priority
    clean.match.extend(te.match)
    clean.action.CopyFrom(te.action)
    key = ("table", te.table_id, tuple(sorted(_match_key(fm) for fm in te.match)), te.priority)
    if te.action.WhichOneof("type") == "action":
        act = te.action.action
        value: tuple = (act.action_id,
                        tuple(sorted((p.param_id, decode_value(p.value)) for p in act.params)))
    else:
        value = ("other", te.action.SerializeToString(deterministic=True))
    return Item(key, value, entity, what or describe_table_entry(info, te))


def group_item(group_id: int, replicas: list[tuple[int, int]], what: str | None = None) -> Item:
    """An Item for a multicast group: (egress port, instance) replicas, order ignored."""
    entity = multicast_group_update(group_id, replicas).entity
    reps = tuple(sorted(replicas))
    text = ", ".join(f"port {p} rid {r}" for p, r in reps)
    return Item((GROUP, group_id), reps, entity,
                what or f"{GROUP} {group_id} [{text}]")


def desired_items(info: P4Info, entries: SwitchEntries) -> dict[Key, Item]:
    """Everything ``entries`` (one switch of a compiled plan) puts on the switch, by key."""
    out: dict[Key, Item] = {}
    for group in entries.groups:
        text = ", ".join(f"port {p} rid {r}" for p, r in sorted(group.replicas))
        item = group_item(group.group_id, list(group.replicas),
                          f"{GROUP} {group.group_id} [{text}] ({group.why})")
        out[item.key] = item
    for entry in entries.entries:
        try:
            te = build_table_entry(info, entry.table, dict(entry.match), entry.action,
                                   dict(entry.params))
        except P4RuntimeError as exc:
            raise StateError(f"switch '{entries.switch}': cannot build {entry.describe()}: "
                             f"{exc}") from None
        item = table_item(info, te, entry.describe())
        out[item.key] = item
    return out


def read_items(client: P4RuntimeClient, info: P4Info) -> dict[Key, Item]:
    """Every table entry and multicast group the switch holds, in one Read RPC (wildcards:
    table id 0 = every table, group id 0 = every group)."""
    tables, groups = p4runtime_pb2.Entity(), p4runtime_pb2.Entity()
    tables.table_entry.table_id = 0
    groups.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
    out: dict[Key, Item] = {}
    for entity in client.read([tables, groups], "all entries and multicast groups"):
        if entity.HasField("table_entry"):
            if not entity.table_entry.is_default_action:
                item = table_item(info, entity.table_entry)
                out[item.key] = item
        else:
            group = entity.packet_replication_engine_entry.multicast_group_entry
            item = group_item(group.multicast_group_id,
                              [(r.egress_port, r.instance) for r in group.replicas])
            out[item.key] = item
    return out


@dataclass
class Diff:
    """A plan's items against a switch's: what is missing, extra, different or equal."""

    missing: list[Item] = field(default_factory=list)
    extra: list[Item] = field(default_factory=list)
    different: list[tuple[Item, Item]] = field(default_factory=list)  # (plan's, switch's)
    equal: list[Item] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.missing or self.extra or self.different)


def diff(want: dict[Key, Item], have: dict[Key, Item]) -> Diff:
    """Compare by key, then by value; lists keep the plan's (or the switch's) order."""
    out = Diff()
    for key, item in want.items():
        there = have.get(key)
        if there is None:
            out.missing.append(item)
        elif there.value == item.value:
            out.equal.append(item)
        else:
            out.different.append((item, there))
    out.extra = [item for key, item in have.items() if key not in want]
    return out


# ---------------------------------------------------------------------------------------------
# names and values of entries read back (for messages about entries no plan describes)


def describe_table_entry(info: P4Info, te: p4runtime_pb2.TableEntry) -> str:
    """``table[field=value, ...] -> action(param=value, ...)`` by P4Info names."""
    tables = {t.preamble.id: t for t in info.proto.tables}
    table = tables.get(te.table_id)
    if table is None:
        return f"table id {te.table_id} (not in our P4Info)"
    fields = {f.id: f for f in table.match_fields}
    parts = []
    for fm in te.match:
        f = fields.get(fm.field_id, p4info_pb2.MatchField(name=f"field {fm.field_id}"))
        kind = fm.WhichOneof("field_match_type")
        m = getattr(fm, kind)
        if kind == "lpm":
            text = f"{format_value(m.value, f.name, f.bitwidth, f.type_name.name)}/{m.prefix_len}"
        elif kind in ("exact", "optional"):
            text = format_value(m.value, f.name, f.bitwidth, f.type_name.name)
        else:
            text = str(m).replace("\n", " ").strip()
        parts.append(f"{f.name}={text}")
    out = f"{table.preamble.name}[{', '.join(parts)}]"
    if te.action.WhichOneof("type") != "action":
        return out + " -> (action profile)"
    actions = {a.preamble.id: a for a in info.proto.actions}
    action = actions.get(te.action.action.action_id)
    if action is None:
        return out + f" -> action id {te.action.action.action_id}"
    params = {p.id: p for p in action.params}
    shown = ", ".join(
        f"{param.name}={format_value(p.value, param.name, param.bitwidth, param.type_name.name)}"
        if (param := params.get(p.param_id)) else f"param {p.param_id}={decode_value(p.value)}"
        for p in te.action.action.params)
    return f"{out} -> {action.preamble.name}({shown})"
