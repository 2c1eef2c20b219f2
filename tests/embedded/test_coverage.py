"""P4 statement coverage on the embedded target (emulation/targets/embedded/coverage.py):
marks compiled in only when asked, hits only for statements a packet ran, files merged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emulation.targets.embedded import coverage
from emulation.targets.embedded.bench import ipv4_udp


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    path = tmp_path / "cov.json"
    monkeypatch.setenv(coverage.ENV, str(path))
    monkeypatch.setattr(coverage, "_recorder", None)
    return path


def fragments(doc: dict[str, Any], hit: int) -> set[str]:
    return {p["fragment"] for p in doc["points"] if p["hit"] == hit}


def test_a_routed_packet_marks_what_it_ran_and_nothing_else(device: Any,
                                                            recording: Path) -> None:
    dev = device("forward")
    dev.insert("MyIngress.route", {"hdr.ipv4.dst_addr": (0x0A000000, 8)}, "MyIngress.forward",
               {"port": 2, "dmac": 0x0A0B0C0D0E0F})
    assert coverage.write_if_recording() == str(recording)
    before = json.loads(recording.read_text())
    assert before["points"] and not fragments(before, 1)  # compiled, nothing run yet
    assert {p["kind"] for p in before["points"]} >= {"primitive", "table"}
    ((port, _),) = dev.send(1, ipv4_udp(b"payload!", 5000, dst=0x0A000005))
    assert port == 2
    coverage.write_if_recording()
    after = json.loads(recording.read_text())
    ran = fragments(after, 1)
    assert any("dmac" in f for f in ran), ran  # the forward action's MAC rewrite
    assert fragments(after, 0), "a routed packet cannot have run the drop paths too"


def test_without_the_variable_nothing_is_compiled_in(device: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(coverage.ENV, raising=False)
    monkeypatch.setattr(coverage, "_recorder", None)
    dev = device("forward")
    assert not [name for name in dev.program.ns.values if name.startswith("COV")]
    assert coverage.write_if_recording() is None


def point(line: int, hit: int, kind: str = "primitive") -> dict[str, Any]:
    return {"file": "p.p4", "line": line, "column": 1, "kind": kind, "fragment": f"s{line}",
            "hit": hit}


def test_files_merge_a_statement_is_covered_if_any_run_covered_it(tmp_path: Path,
                                                                  capsys) -> None:
    a = {"schema": coverage.SCHEMA, "points": [point(1, 1), point(2, 0), point(3, 0)]}
    b = {"schema": coverage.SCHEMA, "points": [point(1, 0), point(2, 1), point(3, 0),
                                               point(4, 1, "condition")]}
    s = coverage.summary(coverage.merge([a, b]))
    assert (s["statements"], s["covered"], s["percent"]) == (4, 3, 75.0)
    assert s["by_kind"] == {"condition": [1, 1], "primitive": [2, 3]}
    assert [p["line"] for p in s["uncovered"]] == [3]
    files = []
    for i, doc in enumerate((a, b)):
        files.append(tmp_path / f"{i}.json")
        files[-1].write_text(json.dumps(doc))
    assert coverage.main([str(f) for f in files]) == 0
    out = capsys.readouterr().out
    assert out.startswith("P4 statement coverage: 3/4 (75.0%)")
    assert "not covered: p.p4:3:1 primitive: s3" in out


def test_a_file_that_is_not_coverage_is_one_line(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "other/1", "points": []}))
    assert coverage.main([str(bad), str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("coverage: error:") and "\n" not in err
