"""The committed P4Testgen tests of the v1model program (tests/ptf_testgen/, `make testgen`):
generated from the current P4 sources, as many as TESTGEN.json says, and every statement
P4Testgen did not reach explained by a named reason and the hand-written tests that run it.
Running them: tests/test_ptf.py (both suites, embedded target and bmv2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from control_plane.p4build import sources

HERE = Path(__file__).resolve().parent
TESTGEN = HERE / "ptf_testgen"
INFO = json.loads((TESTGEN / "TESTGEN.json").read_text())
UNREACHED = json.loads((TESTGEN / "unreached.json").read_text())["groups"]


def test_the_tests_were_generated_from_the_current_sources() -> None:
    assert INFO["sources_sha256"] == sources.sources_sha256(), \
        "p4src changed since tests/ptf_testgen was generated: run `make testgen`"
    assert INFO["program"] == "p4src/v1model/inart.p4" and INFO["seed"] == 1


def test_the_file_holds_the_tests_testgen_json_counts() -> None:
    text = (TESTGEN / "inart_v1model.py").read_text()
    assert text.startswith("# P4Runtime PTF test for p4src/v1model/inart.p4\n"
                           f"# p4testgen seed: {INFO['seed']}\n")
    ids = [int(n) for n in re.findall(r"^class Test(\d+)\(AbstractTest\)", text, re.M)]
    assert len(ids) == INFO["tests"] and len(set(ids)) == len(ids)
    assert 0 < INFO["covered"] <= INFO["statements"]
    assert INFO["statements"] - INFO["covered"] == len(INFO["uncovered"])


def test_every_statement_p4testgen_did_not_reach_is_explained() -> None:
    unexplained = [u for u in INFO["uncovered"]
                   if not any(g["lines"][0] <= u["line"] <= g["lines"][1] for g in UNREACHED)]
    assert not unexplained, f"explain these in tests/ptf_testgen/unreached.json: {unexplained}"
    suite = {f"{p.stem}.{name}" for p in (HERE / "ptf").glob("ptf_*.py")
             for name in re.findall(r"^class (\w+)\(", p.read_text(), re.M)}
    for group in UNREACHED:
        assert group["why"] and group["what"], group
        missing = set(group["covered_by"]) - suite
        assert not missing, f"{group['lines']}: no hand-written test {sorted(missing)}"
        # no stale group: each still explains a statement P4Testgen did not reach
        assert any(group["lines"][0] <= u["line"] <= group["lines"][1]
                   for u in INFO["uncovered"]), group
