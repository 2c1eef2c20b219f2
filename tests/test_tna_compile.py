"""The TNA build step end to end with a stand-in compiler driver (the real back end is built
from source and absent here): the command it gets, the artifacts and build-info.json it
leads to, the one-pipe and no-warning rules, and trial builds of another source."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.p4build import tna
from control_plane.p4build import tofino_compiler as tc
from control_plane.p4build.sources import BuildError
from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2
from control_plane.repo import REPO, child_env

# a TNA source on trial, outside the checkout (the stand-in driver reads only its N)
TRIAL_SOURCE = "#ifndef INA_N\n#define INA_N 64\n#endif\n"


@pytest.fixture
def trial(tmp_path: Path) -> Path:
    path = tmp_path / "p4src" / "trial" / "inart.p4"
    path.parent.mkdir(parents=True)
    path.write_text(TRIAL_SOURCE)
    return path

# What bf-p4c writes, cut to the parts the build reads; STAGES, WARN and BFA are filled in.
DRIVER = r'''#!/usr/bin/env python3
import json, pathlib, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("p4c 1.2.5.16 (SHA: stand-in)")
    sys.exit(0)
pathlib.Path(__file__).with_name("argv.json").write_text(json.dumps(args))
out = pathlib.Path(args[args.index("-o") + 1])
logs = out / "pipe" / "logs"
logs.mkdir(parents=True)
for name in args[args.index("--p4runtime-files") + 1].split(","):
    pathlib.Path(name).write_bytes(P4INFO)
(out / "bfrt.json").write_text("{}")
(out / "pipe" / "context.json").write_text("{}")
(out / "pipe" / "tofino.bin").write_bytes(b"bin")
rows = "".join(f"|      {s}       |  1   |\n" for s in range(STAGES))
(logs / "mau.resources.log").write_text(
    "------\n| Stage Number | SRAM |\n------\n" + rows + "|    Totals    | 1 |\n"
    "Allocated Resource Usage\n")
(logs / "phv_allocation_summary_1.log").write_text(
    "|   Usage for 32b   |  60 ( 93.8 %)   |\n| Overall PHV Usage |  90 |\n")
(logs / "metrics.json").write_text(json.dumps(
    {"compiler_version": "9.13.4", "target": "tofino",
     "mau": {"srams": 1}, "phv": {"normal": [{"bit_width": 32, "containers_occupied": 60}]}}))
(out / "pipe" / "inart.bfa").write_text(BFA)
for line in WARN:
    print(line)
'''


# a parser whose one select kept its match, then two tables of one stage on one register's
# stateful ALU, as bf-p4c writes them for if/else
PARSER = """parser ingress:
  start: $entry_point.start
  states:
    $entry_point.start:
      *:
        load: { byte1 : 0 }
        next: parse_ethernet
    parse_ethernet:
      match: [ half ]
      0x0800:
        next: parse_ipv4
      0x****:
        next: end
deparser ingress:
  dictionary:
    B4: B7(6)
"""
BFA_PAIR = PARSER + """stage 3 ingress:
  hash_action tbl_inart466 3:
    gateway:
      name: cond-46
    stateful: tbl_inart468$salu.InaIngress.slot_round(hash_dist 0, meter_pfe, meter_type)
  hash_action tbl_inart468 4:
    stateful: tbl_inart468$salu.InaIngress.slot_round(hash_dist 0, $DEFAULT, $DEFAULT)
  hash_action tbl_other 5:
    stateful: tbl_other$salu.InaIngress.slot_chunk(hash_dist 0, $DEFAULT, $DEFAULT)
"""
PAIR_WARNINGS = [
    "OUT/pipe/inart.bfa:2256: warning: Action bus byte 96 set in table tbl_inart468 and table "
    "tbl_inart466",
    "OUT/pipe/inart.bfa:2260: warning: Conflicting instruction slot usage for non-exlusive "
    "table tbl_inart468 action inart468",
    "OUT/pipe/inart.bfa:2223: warning: and table tbl_inart466 action inart466"]


def _p4info(counters: tuple[str, ...] = ("InaEgress.events", "InaIngress.route_events",
                                          "InaEgress.replica_drops", "InaIngress.events")) -> bytes:
    info = p4info_pb2.P4Info()
    for name in counters:
        info.counters.add().preamble.name = name
    return info.SerializeToString()


def _driver(tmp_path: Path, stages: int = 3, warn: tuple[str, ...] | list[str] = (),
            bfa: str = "") -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    driver = bindir / "p4c"
    driver.write_text(DRIVER.replace("STAGES", str(stages)).replace("WARN", repr(list(warn)))
                      .replace("BFA", repr(bfa)).replace("P4INFO", repr(_p4info())))
    driver.chmod(0o755)
    (bindir / "p4c-barefoot").write_text("")
    return driver


def test_a_trial_build_of_another_source(tmp_path, trial):
    driver = _driver(tmp_path)
    out = tmp_path / "trial"
    info = tna.compile_program(str(driver), out, trial)
    args = json.loads((driver.parent / "argv.json").read_text())
    assert args[-1] == str(trial)
    assert args[:4] == ["--target", "tofino", "--arch", "tna"]
    assert info["N"] == 64 and info["stages"] == 3
    # from the P4Info: every '*events' counter, the ingress ones first
    assert info["event_counters"] == ["InaIngress.events", "InaIngress.route_events",
                                      "InaEgress.events"]
    assert info["event_counter"] == "InaIngress.events"
    assert info["compiler_kind"] == tc.OPEN_SOURCE
    assert info["compiler_version"] == "p4c 1.2.5.16 (SHA: stand-in)"
    assert info["compiler_command"].endswith(f" {trial}")
    assert json.loads((out / "build-info.json").read_text()) == info
    assert "fits one pipe: yes (3 of 12 MAU stages" in (out / "resources.txt").read_text()
    for key, name in tna.ARTIFACTS.items():
        assert (out / name).is_file(), key


def test_more_than_twelve_stages_is_refused(tmp_path, trial):
    with pytest.raises(BuildError, match="does not fit one pipe"):
        tna.compile_program(str(_driver(tmp_path, stages=13)), tmp_path / "out", trial)
    assert not (tmp_path / "out").exists()


def test_a_compiler_warning_is_refused(tmp_path, trial):
    driver = _driver(tmp_path, warn=["warning: something the build does not allow"])
    with pytest.raises(BuildError, match="emitted warnings"):
        tna.compile_program(str(driver), tmp_path / "out", trial)


def test_assembler_pairs_on_one_stateful_alu_are_allowed(tmp_path, trial):
    info = tna.compile_program(str(_driver(tmp_path, warn=PAIR_WARNINGS, bfa=BFA_PAIR)),
                               tmp_path / "out", trial)
    assert info["stages"] == 3 and info["parser_select_states"] == 1


def test_a_parser_select_without_its_match_is_refused(tmp_path, trial):
    bfa = BFA_PAIR.replace("      match: [ half ]\n", "")
    with pytest.raises(BuildError, match="ingress parse_ethernet select among.*pull/5753"):
        tna.compile_program(str(_driver(tmp_path, bfa=bfa)), tmp_path / "out", trial)
    assert not (tmp_path / "out").exists()


def test_assembler_pairs_on_two_stateful_alus_are_refused(tmp_path, trial):
    warn = [w.replace("tbl_inart466", "tbl_other") for w in PAIR_WARNINGS]
    refused = r"(?s)emitted warnings.*and table tbl_other action inart466\n\nall of"
    with pytest.raises(BuildError, match=refused):
        tna.compile_program(str(_driver(tmp_path, warn=warn, bfa=BFA_PAIR)),
                            tmp_path / "out", trial)


def test_the_parser_match_register_bug_is_named(tmp_path, trial):
    warn = ["OUT/pipe/inart.bfa:430: warning: Can't match parser state due to previous match"]
    with pytest.raises(BuildError, match="p4lang/p4c/pull/5753"):
        tna.compile_program(str(_driver(tmp_path, warn=warn, bfa=BFA_PAIR)),
                            tmp_path / "out", trial)
    assert not (tmp_path / "out").exists()


def test_a_trial_source_needs_its_own_directory(trial):
    proc = subprocess.run([sys.executable, "-m", "control_plane.p4build", "--arch", "tna",
                           "--tna-source", str(trial)], cwd=REPO, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "--tna-source needs --tna-out" in proc.stderr


def test_a_build_tree_records_its_local_changes(tmp_path):
    src = tmp_path / "p4c"
    src.mkdir()
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t"]
    (src / "a.cpp").write_text("int a;\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "a.cpp"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    assert tc.source_changes(src) == ((), "")
    (src / "a.cpp").write_text("int b;\n")
    changes, digest = tc.source_changes(src)
    assert changes == ("M a.cpp",) and len(digest) == 64
    assert tc.source_changes(tmp_path / "not-git") == ((), "")


def test_a_program_without_event_counters_is_refused(tmp_path):
    path = tmp_path / "p4info.bin"
    path.write_bytes(_p4info(("InaEgress.replica_drops",)))
    with pytest.raises(BuildError, match="no counter named"):
        tna.event_counters(path)
