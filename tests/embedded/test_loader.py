"""Pipeline load: unsupported or malformed constructs are refused with their name and place."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from emulation.targets.embedded.json_loader import PipelineError
from emulation.targets.embedded.pipeline import Switch, load_program

STD_FIELDS = [["ingress_port", 9, False], ["egress_spec", 9, False], ["egress_port", 9, False],
              ["instance_type", 32, False], ["packet_length", 32, False],
              ["mcast_grp", 16, False], ["egress_rid", 16, False],
              ["checksum_error", 1, False], ["parser_error", 32, False], ["_padding", 6, False]]


def minimal() -> dict[str, Any]:
    """The smallest v1model-shaped document: parse Ethernet, reflect it to its ingress port."""
    return {
        "__meta__": {"version": [2, 23]},
        "header_types": [
            {"name": "standard_metadata", "id": 0, "fields": STD_FIELDS},
            {"name": "eth_t", "id": 1, "fields": [["dst", 48, False], ["src", 48, False],
                                                 ["type", 16, False]]},
        ],
        "headers": [
            {"name": "standard_metadata", "id": 0, "header_type": "standard_metadata",
             "metadata": True},
            {"name": "eth", "id": 1, "header_type": "eth_t", "metadata": False},
        ],
        "errors": [["NoError", 0], ["PacketTooShort", 1], ["NoMatch", 2]],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0,
             "parser_ops": [{"op": "extract",
                             "parameters": [{"type": "regular", "value": "eth"}]}],
             "transition_key": [],
             "transitions": [{"type": "default", "value": None, "mask": None,
                              "next_state": None}]}]}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["eth"]}],
        "actions": [{"name": "reflect", "id": 0, "runtime_data": [], "primitives": [
            {"op": "assign", "parameters": [
                {"type": "field", "value": ["standard_metadata", "egress_spec"]},
                {"type": "field", "value": ["standard_metadata", "ingress_port"]}]}]}],
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "t", "tables": [
                {"name": "t", "id": 0, "key": [], "match_type": "exact", "type": "simple",
                 "max_size": 1, "with_counters": False, "direct_meters": None,
                 "action_ids": [0], "actions": ["reflect"], "next_tables": {"reflect": None},
                 "default_entry": {"action_id": 0, "action_const": True, "action_data": [],
                                   "action_entry_const": True}}],
             "action_profiles": [], "conditionals": []},
            {"name": "egress", "id": 1, "init_table": None, "tables": [],
             "action_profiles": [], "conditionals": []},
        ],
    }


def load(doc: dict[str, Any]) -> Any:
    return load_program(json.dumps(doc).encode())


def test_minimal_program_reflects_frames() -> None:
    sw = Switch(load(minimal()))
    frame = bytes(range(14)) + b"payload"
    assert sw.process(3, frame) == [(3, frame)]


def test_truncated_and_empty_frames_are_handled_not_raised() -> None:
    sw = Switch(load(minimal()))
    # simple_switch semantics: a parser error still enters ingress (with parser_error set)
    assert sw.process(1, b"\x01\x02\x03") == [(1, b"\x01\x02\x03")]
    assert sw.process(1, b"") == [(1, b"")]
    assert sw.errors == {"parser_error.PacketTooShort": 2}
    assert sum(sw.drops.values()) == 0  # flagged, not dropped: the program forwarded them


def test_exception_in_processing_is_dropped_and_counted() -> None:
    doc = minimal()
    doc["actions"][0]["primitives"].append(
        {"op": "assert", "parameters": [{"type": "bool", "value": False}]})
    sw = Switch(load(doc))
    assert sw.process(1, bytes(20)) == []
    assert sw.drops == {"engine_error": 1}


@pytest.mark.parametrize("mutate, where, what", [
    (lambda d: d.__setitem__("meter_arrays", [{"name": "m", "id": 0}]), "meter_arrays[0] 'm'",
     "not supported"),
    (lambda d: d.__setitem__("learn_lists", [{"name": "dg", "id": 0}]), "learn_lists[0] 'dg'",
     "not supported"),
    (lambda d: d["actions"][0]["primitives"].append({"op": "execute_meter", "parameters": []}),
     "actions[0] 'reflect' primitives[1] op 'execute_meter'", "not supported"),
    (lambda d: d["actions"][0]["primitives"][0]["parameters"].__setitem__(
        1, {"type": "expression", "value": {"op": "frobnicate", "left": None, "right": None}}),
     "actions[0] 'reflect' primitives[0]", "'frobnicate' is not supported"),
    (lambda d: d["pipelines"][0]["tables"][0].__setitem__("type", "indirect"),
     "pipelines[0] 'ingress' tables[0] 't'", "action profiles"),
    (lambda d: d["__meta__"].__setitem__("version", [1, 0]), "__meta__.version", "expected"),
    (lambda d: d["actions"][0]["primitives"][0]["parameters"][0].__setitem__(
        "value", ["standard_metadata", "nope"]), "actions[0] 'reflect'", "no field 'nope'"),
    (lambda d: d.__setitem__("whatever", 1), "whatever", "not supported"),
])
def test_unsupported_constructs_are_refused_with_location(mutate: Any, where: str,
                                                          what: str) -> None:
    doc = copy.deepcopy(minimal())
    mutate(doc)
    with pytest.raises(PipelineError) as err:
        load(doc)
    assert where in str(err.value) and what in str(err.value)


def test_not_json_is_refused() -> None:
    with pytest.raises(PipelineError, match="not valid JSON"):
        load_program(b"{nope")
    with pytest.raises(PipelineError, match="malformed"):
        doc = minimal()
        del doc["actions"][0]["id"]
        load(doc)


def test_a_default_action_installed_later_runs_on_a_miss() -> None:
    doc = minimal()
    del doc["pipelines"][0]["tables"][0]["default_entry"]  # no default: a miss runs nothing
    sw = Switch(load(doc))
    frame = bytes(range(14))
    assert sw.process(3, frame) == [(0, frame)]  # egress_spec stays 0
    table = sw.program.tables["t"]
    table.set_default(table.actions["reflect"], ())
    assert sw.process(3, frame) == [(3, frame)]


def test_exit_deep_in_a_control_stops_it() -> None:
    """Thirty nested conditions (deeper than one function's nesting) whose paths all join at
    the reflect table; the innermost runs a table whose default action exits: the join must
    not run."""
    doc = minimal()
    ingress = doc["pipelines"][0]
    doc["actions"].append({"name": "leave", "id": 1, "runtime_data": [], "primitives": [
        {"op": "exit", "parameters": []}]})
    ingress["init_table"] = "c0"
    ingress["conditionals"] = [
        {"name": f"c{i}", "id": i, "expression": {"type": "bool", "value": True},
         "true_next": f"c{i + 1}" if i < 29 else "leave_t", "false_next": "t"}
        for i in range(30)]
    ingress["tables"].append(
        {"name": "leave_t", "id": 1, "key": [{"match_type": "exact", "target": ["eth", "type"],
                                              "mask": None}],
         "match_type": "exact", "type": "simple", "max_size": 4, "with_counters": False,
         "action_ids": [1], "actions": ["leave"], "next_tables": {"leave": "t"},
         "default_entry": {"action_id": 1, "action_const": False, "action_data": []}})
    sw = Switch(load(doc))
    assert sw.process(3, bytes(14)) == [(0, bytes(14))]  # reflect (egress_spec = 3) skipped


def test_a_metadata_struct_may_hold_a_varbit_field() -> None:
    """p4c makes a struct with a varbit member a metadata header with a "*" field."""
    doc = minimal()
    doc["header_types"].append({"name": "m_t", "id": 2, "fields": [["opts", "*"]],
                                "max_length": 4})
    doc["headers"].append({"name": "m", "id": 2, "header_type": "m_t", "metadata": True})
    sw = Switch(load(doc))
    assert sw.process(1, bytes(14)) == [(1, bytes(14))]
