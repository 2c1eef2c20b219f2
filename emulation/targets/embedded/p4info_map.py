"""Bind a P4Info to a compiled Program: P4Runtime ids -> tables, actions, counters, registers.

p4c writes the same fully qualified names into the P4Info and the bmv2 JSON, and match fields
and action parameters in the same order, so the binding is by name and position.  A P4Info
object with no counterpart in the JSON makes SetForwardingPipelineConfig fail, except an
action or a table p4c left out of the JSON: p4c writes the P4Info from the front end's program,
and its mid end then drops what no path can reach (a ``NoAction`` no table can run; a table
applied only behind a branch that constant folding rules out, e.g. inside a nested ``switch``).
bmv2 accepts such a pipeline and refuses entries that use the action or go to the table, and so
do we; reading such a table finds no entries.  A match field of type
``error`` has bitwidth 0 in the P4Info (p4c treats the type as a string): its values are the
errors' names.  Parser value sets are bound by name; the P4Info gives their size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2
from emulation.targets.embedded.actions import Action
from emulation.targets.embedded.externs import CounterArray, RegisterArray, ValueSet
from emulation.targets.embedded.json_loader import PipelineError
from emulation.targets.embedded.pipeline import Program
from emulation.targets.embedded.tables import Table

MATCH_TYPES = {
    p4info_pb2.MatchField.EXACT: "exact", p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary", p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}


@dataclass
class TableBinding:
    table: Table
    info: p4info_pb2.Table
    field_ids: list[int]  # P4Info match field id per key position
    field_types: list[str]  # P4Runtime match kind per key position
    direct_counter_id: int = 0
    error_fields: set[int] = field(default_factory=set)  # key positions of type error
    errors: dict[str, int] = field(default_factory=dict)  # their values, by name


@dataclass
class P4InfoMap:
    p4info: p4info_pb2.P4Info
    tables: dict[int, TableBinding] = field(default_factory=dict)
    actions: dict[int, Action] = field(default_factory=dict)
    action_infos: dict[int, p4info_pb2.Action] = field(default_factory=dict)
    action_ids: dict[str, int] = field(default_factory=dict)
    counters: dict[int, CounterArray] = field(default_factory=dict)
    direct_counters: dict[int, TableBinding] = field(default_factory=dict)
    registers: dict[int, RegisterArray] = field(default_factory=dict)
    value_sets: dict[int, tuple[ValueSet, list[int]]] = field(default_factory=dict)
    table_ids: dict[str, int] = field(default_factory=dict)
    absent_actions: dict[int, str] = field(default_factory=dict)  # P4Info-only actions
    absent_tables: dict[int, str] = field(default_factory=dict)  # P4Info-only tables
    errors: dict[str, int] = field(default_factory=dict)  # error name -> value
    error_names: dict[int, str] = field(default_factory=dict)


def bind(p4info: p4info_pb2.P4Info, program: Program) -> P4InfoMap:
    """Check that the P4Info describes the program and index it by id."""
    m = P4InfoMap(p4info)
    m.error_names = dict(program.error_names)
    m.errors = {name: code for code, name in m.error_names.items()}
    actions_by_name = {a.name: a for a in program.actions.values()}
    for a in p4info.actions:
        name = a.preamble.name
        act = actions_by_name.get(name)
        if act is None:
            m.absent_actions[a.preamble.id] = name
            m.action_ids[name] = a.preamble.id
            continue
        if len(a.params) != len(act.param_widths):
            raise PipelineError(f"p4info action {name!r}", "parameter count differs from JSON")
        for p, w in zip(a.params, act.param_widths, strict=True):
            if p.bitwidth != w:
                raise PipelineError(f"p4info action {name!r} param {p.name!r}",
                                    f"bitwidth {p.bitwidth} != JSON {w}")
        m.actions[a.preamble.id] = act
        m.action_infos[a.preamble.id] = a
        m.action_ids[name] = a.preamble.id
    for t in p4info.tables:
        name = t.preamble.name
        table = program.tables.get(name)
        if table is None:
            m.absent_tables[t.preamble.id] = name
            m.table_ids[name] = t.preamble.id
            continue
        if len(t.match_fields) != len(table.keys):
            raise PipelineError(f"p4info table {name!r}",
                                f"{len(t.match_fields)} match fields, JSON key has "
                                f"{len(table.keys)}")
        kinds = []
        error_fields = set()
        for pos, (mf, kf) in enumerate(zip(t.match_fields, table.keys, strict=True)):
            kind = MATCH_TYPES.get(mf.match_type)
            if kind is None:
                raise PipelineError(f"p4info table {name!r} field {mf.name!r}",
                                    "unsupported match type")
            if mf.bitwidth == 0 and kf.match_type in ("exact", "ternary", "optional"):
                error_fields.add(pos)  # type error: matched by the errors' names
            elif mf.bitwidth != kf.width:
                raise PipelineError(f"p4info table {name!r} field {mf.name!r}",
                                    f"bitwidth {mf.bitwidth} != JSON {kf.width}")
            kinds.append(kind)
        binding = TableBinding(table, t, [mf.id for mf in t.match_fields], kinds,
                               error_fields=error_fields, errors=m.errors)
        m.tables[t.preamble.id] = binding
        m.table_ids[name] = t.preamble.id
    for c in p4info.counters:
        arr = program.res.counters.get(c.preamble.name)
        if arr is None:
            raise PipelineError(f"p4info counter {c.preamble.name!r}", "not in the JSON")
        m.counters[c.preamble.id] = arr
    for c in p4info.direct_counters:
        if c.direct_table_id in m.absent_tables:
            continue  # left out of the JSON with its table: it never counts
        binding = m.tables.get(c.direct_table_id)
        if binding is None:
            raise PipelineError(f"p4info direct counter {c.preamble.name!r}",
                                f"unknown direct_table_id {c.direct_table_id}")
        binding.direct_counter_id = c.preamble.id
        m.direct_counters[c.preamble.id] = binding
    for r in p4info.registers:
        arr = program.res.registers.get(r.preamble.name)
        if arr is None:
            raise PipelineError(f"p4info register {r.preamble.name!r}", "not in the JSON")
        m.registers[r.preamble.id] = arr
    for vs in p4info.value_sets:
        where = f"p4info value_set {vs.preamble.name!r}"
        arr = program.res.value_sets.get(vs.preamble.name)
        if arr is None:
            raise PipelineError(where, "not in the JSON")
        widths = [mf.bitwidth for mf in vs.match]
        if arr.widths and widths != arr.widths:
            raise PipelineError(where, f"match widths {widths} != the parser's key "
                                       f"{arr.widths}")
        arr.size, arr.widths = vs.size, widths
        m.value_sets[vs.preamble.id] = (arr, widths)
    for unsupported in ("action_profiles", "meters", "direct_meters", "digests"):
        items = getattr(p4info, unsupported)
        if len(items):
            raise PipelineError(f"p4info {unsupported} {items[0].preamble.name!r}",
                                "not supported by the embedded target")
    return m
