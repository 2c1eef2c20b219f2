"""The committed P4 build (p4src/build) matches its sources and N; runs without p4c."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from control_plane.drivers.p4runtime import P4Info
from control_plane.p4build import sources, tna, tofino_resources, v1model
from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2
from control_plane.repo import REPO
from host_stack.ina import wire


@pytest.fixture(scope="module")
def info() -> dict:
    return sources.load_build_info()


@pytest.fixture(scope="module")
def p4info() -> P4Info:
    return P4Info.from_file(v1model.artifact_paths()[1])


def test_build_matches_sources():
    v1model.check_fresh()


def test_changed_source_is_detected(tmp_path):
    shutil.copytree(sources.P4SRC, tmp_path / "p4src")
    v1model.check_fresh(root=tmp_path / "p4src")
    main = tmp_path / "p4src" / "v1model" / "inart.p4"
    main.write_text(main.read_text() + "\n// edited\n")
    with pytest.raises(sources.BuildError, match="make p4"):
        v1model.check_fresh(root=tmp_path / "p4src")


def test_edited_artifact_is_detected(tmp_path):
    shutil.copytree(sources.BUILD_DIR, tmp_path / "build")
    (tmp_path / "build" / v1model.BMV2_JSON).write_text("{}")
    with pytest.raises(sources.BuildError, match="bmv2_json_sha256"):
        v1model.check_fresh(tmp_path / "build")


def test_recorded_n_is_the_source_constant_and_the_wire_default(info):
    consts = sources.read_constants()
    assert info["N"] == consts.n == wire.DEFAULT_N
    assert info["slots"] == consts.slots
    assert info["events"] == consts.events


def test_bmv2_json_payload_has_n_signed_32bit_values(info):
    doc = json.loads((sources.BUILD_DIR / v1model.BMV2_JSON).read_text())
    types = {t["name"]: t for t in doc["header_types"]}
    fields = types["ina_values_t"]["fields"]
    assert [f[0] for f in fields] == [f"v{i}" for i in range(info["N"])]
    assert all(f[1] == 32 and f[2] is True for f in fields)
    ina = [f[:2] for f in types["ina_t"]["fields"]]
    assert ina == [["pkt_type", 8], ["flags", 8], ["job", 16], ["round", 32], ["chunk", 32],
                   ["slot", 16], ["count", 16], ["bitmap", 64]]
    assert sum(w for _, w in ina) // 8 == wire.HEADER_LEN


def test_p4info_has_one_sum_register_per_value(info, p4info):
    sums = sorted(n for n in p4info.registers if n.startswith("InaIngress.slot_sum_"))
    assert sums == sorted(f"InaIngress.slot_sum_{i}" for i in range(info["N"]))
    for name in [*sums, "InaIngress.slot_tag", "InaIngress.slot_bitmap", "InaIngress.slot_count"]:
        assert p4info.registers[name].size == info["slots"]
    assert p4info.counter(info["event_counter"]).size == info["event_counter_size"]


# The names the controller generates entries against (p4src/README.md); renaming any of them
# breaks the control plane, so it must be a deliberate change here too.
CONTRACT = {
    "InaIngress.route_pair": (["src_addr", "dst_addr"], {"InaIngress.set_next_hop"}),
    "InaIngress.route_dst": (["dst_addr"], {"InaIngress.set_next_hop"}),
    "InaIngress.ina_aggregate": (["job", "ps_addr", "worker_addr"], {"InaIngress.aggregate"}),
    "InaIngress.result_multicast": (["job", "ps_addr", "dst_addr"], {"InaIngress.multicast"}),
    "InaEgress.result_rewrite": (["egress_rid"], {"InaEgress.rewrite_result"}),
}
PARAMS = {
    "InaIngress.set_next_hop": [("port", 9), ("dst_mac", 48), ("src_mac", 48)],
    "InaIngress.aggregate": [("pool_base", 32), ("pool_size", 16), ("fan_in", 16), ("rank", 8),
                          ("agg_addr", 32)],
    "InaIngress.multicast": [("group", 16)],
    "InaEgress.rewrite_result": [("dst_addr", 32), ("dst_mac", 48), ("src_mac", 48)],
}


@pytest.mark.parametrize("table", sorted(CONTRACT))
def test_controller_facing_tables(p4info, table):
    fields, actions = CONTRACT[table]
    t = p4info.table(table)
    assert [f.name for f in t.match_fields] == fields
    usable = {p4info.proto.actions[i].preamble.name for i, a in enumerate(p4info.proto.actions)
              if any(r.id == a.preamble.id and r.scope != r.DEFAULT_ONLY for r in t.action_refs)}
    assert usable == actions


@pytest.mark.parametrize("action", sorted(PARAMS))
def test_controller_facing_action_params(p4info, action):
    assert [(p.name, p.bitwidth) for p in p4info.action(action).params] == PARAMS[action]


def test_bmv2_json_names_no_machine_paths():
    """A rebuild on another checkout must reproduce the JSON: no absolute or temp paths."""
    doc = json.loads((sources.BUILD_DIR / v1model.BMV2_JSON).read_text())
    assert doc["program"] == "p4src/v1model/inart.p4"
    text = (sources.BUILD_DIR / v1model.BMV2_JSON).read_text()
    assert '"filename" : "/' not in text and "/tmp/" not in text


# ---------------------------------------------------------------------------------------------
# the Tofino (TNA) build: p4src/build/tna


@pytest.fixture(scope="module")
def tna_info() -> dict:
    return sources.load_build_info(tna.TNA_BUILD)


@pytest.fixture(scope="module")
def tna_p4info() -> P4Info:
    return P4Info.from_file(tna.TNA_BUILD / tna.ARTIFACTS["p4info"])


def test_tna_build_matches_sources():
    tna.check_fresh()


@pytest.mark.parametrize("edited", ["tna/inart.p4", "common/constants.p4"])
def test_changed_tna_or_common_source_is_detected(tmp_path, edited):
    shutil.copytree(sources.P4SRC, tmp_path / "p4src")
    tna.check_fresh(root=tmp_path / "p4src")
    path = tmp_path / "p4src" / edited
    path.write_text(path.read_text() + "\n// edited\n")
    with pytest.raises(sources.BuildError, match="make p4"):
        tna.check_fresh(root=tmp_path / "p4src")


@pytest.mark.parametrize("artifact", sorted(tna.ARTIFACTS))
def test_edited_or_missing_tna_artifact_is_detected(tmp_path, artifact):
    shutil.copytree(tna.TNA_BUILD, tmp_path / "tna")
    path = tmp_path / "tna" / tna.ARTIFACTS[artifact]
    path.write_bytes(path.read_bytes() + b"\n")
    with pytest.raises(sources.BuildError, match=f"artifacts\\['{artifact}'\\]"):
        tna.check_fresh(tmp_path / "tna")
    path.unlink()
    with pytest.raises(sources.BuildError, match="is missing"):
        tna.check_fresh(tmp_path / "tna")


def test_tna_records_its_n_and_the_shared_constants(tna_info):
    consts = sources.read_constants()
    assert tna_info["N"] == tna.read_n() and 1 <= tna_info["N"] <= 64  # repeat.p4's range
    assert tna_info["slots"] == consts.slots and tna_info["events"] == consts.events
    assert tna_info["arch"] == "tna" and tna_info["stages"] <= 12


def test_tna_build_was_checked_for_the_parser_match_bug(tna_info):
    """The build step checks every selecting parser state of the .bfa kept its match (p4c's
    Tofino-1 parser match register bug); a build made without that check does not say so."""
    assert tna_info.get("parser_select_states", 0) >= 1


@pytest.mark.parametrize("table", sorted(CONTRACT))
def test_tna_has_the_v1model_tables(tna_p4info, table):
    test_controller_facing_tables(tna_p4info, table)


@pytest.mark.parametrize("action", sorted(PARAMS))
def test_tna_has_the_v1model_action_params(tna_p4info, action):
    test_controller_facing_action_params(tna_p4info, action)


def test_tna_event_counters_and_sums(tna_info, tna_p4info):
    for name in tna_info["event_counters"]:
        assert tna_p4info.counter(name).size == tna_info["event_counter_size"]
    assert tna_p4info.counter("InaEgress.replica_drops").size == 1
    sums = {n: r for n, r in tna_p4info.registers.items()
            if n.startswith("InaIngress.slot_sum_")}
    per_register = {_register_words(tna_p4info, r) for r in sums.values()}
    assert len(per_register) == 1  # one value per register, or a pair of values per register
    assert sorted(sums) == sorted(f"InaIngress.slot_sum_{i}"
                                  for i in range(tna_info["N"] // per_register.pop()))


def _register_words(p4info: P4Info, register) -> int:
    """32-bit values per register cell: 1 for bit<32>/int<32>, the field count of a struct
    (a pair register holds two)."""
    spec = register.type_spec
    if spec.HasField("bitstring"):
        return 1
    fields = p4info.proto.type_info.structs[spec.struct.name].members
    assert all(f.type_spec.bitstring.WhichOneof("type_spec") in ("bit", "int") for f in fields)
    return len(fields)


def test_tna_bfrt_json_names_match_the_p4info(tna_p4info):
    doc = json.loads((tna.TNA_BUILD / "bfrt.json").read_text())
    tables = {t["name"]: t for t in doc["tables"]}
    for table, (fields, actions) in CONTRACT.items():
        t = tables[f"pipe.{table}"]
        assert [k["name"] for k in t["key"]] == fields
        assert actions <= {a["name"] for a in t["action_specs"]}


def test_tna_resource_report_shows_one_pipe():
    text = (tna.TNA_BUILD / "resources.txt").read_text()
    assert "fits one pipe: yes" in text


_DOC_STAGE_ROW = re.compile(r"^\| (\d+) \| (.*) \|$")
_DOC_NAME = re.compile(r"`([A-Za-z_][\w.]*?)(?:_(\d+) \.\. \w+?_(\d+))?`")


def _doc_stage_rows(text: str) -> dict[int, list[str]]:
    """The table of docs/tofino-program.md headed "ingress stage (from `pipe/context.json`)": stage
    -> the P4 names it lists (a range `slot_sum_9 .. slot_sum_11` expanded)."""
    rows: dict[int, list[str]] = {}
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "from `pipe/context.json`" in line
                 and line.startswith("|"))
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        m = _DOC_STAGE_ROW.match(line)
        if not m:
            continue
        names = []
        for name, lo, hi in _DOC_NAME.findall(m.group(2)):
            names += [f"{name}_{i}" for i in range(int(lo), int(hi) + 1)] if lo else [name]
        rows[int(m.group(1))] = names
    return rows


def test_docs_stage_table_is_the_compilers_placement():
    """docs/tofino-program.md's ingress stage table names each table, register and counter in the
    stage pipe/context.json places it in (rebuild, then update the table)."""
    placed = tofino_resources.stage_map(
        json.loads((tna.TNA_BUILD / "pipe" / "context.json").read_text()))
    rows = _doc_stage_rows((REPO / "docs" / "tofino-program.md").read_text())
    assert sorted(rows) == list(range(12))
    for stage, names in rows.items():
        for name in names:
            full = name if "." in name else f"InaIngress.{name}"
            assert stage in placed.get(full, set()), (name, stage, placed.get(full))


def test_doc_stage_rows_reader():
    rows = _doc_stage_rows("| 0 | `x` |\n\n| stage (from `pipe/context.json`) | what |\n|-|-|\n"
                           "| 6 | `slot_count`, `slot_sum_9 .. slot_sum_11` |\n"
                           "| 10 | `route_dst`, the `InaIngress.events` counter |\n| x | y |\n"
                           "\n| 11 | `z` |")
    assert rows == {6: ["slot_count", "slot_sum_9", "slot_sum_10", "slot_sum_11"],
                    10: ["route_dst", "InaIngress.events"]}


def test_register_words_of_a_pair_register():
    info = p4info_pb2.P4Info()
    pair = info.type_info.structs["sum_pair_t"]
    for name in ("lo", "hi"):
        member = pair.members.add(name=name)
        member.type_spec.bitstring.int.bitwidth = 32
    reg = info.registers.add()
    reg.preamble.name = "InaIngress.slot_sum_0"
    reg.type_spec.struct.name = "sum_pair_t"
    one = info.registers.add()
    one.type_spec.bitstring.int.bitwidth = 32
    p4info = P4Info(info)
    assert _register_words(p4info, reg) == 2 and _register_words(p4info, one) == 1
