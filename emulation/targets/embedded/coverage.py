"""Statement coverage of the P4 program, measured by the embedded target: which of the
program's statements any packet executed, across every pipeline pushed in the process's life.

A statement is what p4c's bmv2 JSON carries with a P4 source location (``source_info``): a
primitive call of an action (an assignment, a register read or write, a counter, ...), a
condition of an ``if``, and the apply of a table with keys.  Statements the preprocessor
repeats at one location (the per-value code of ``INA_REPEAT``) count once.  With
``$INART_P4_COVERAGE`` set to a file, the target compiles a mark into each statement's code
(nothing otherwise: no cost when off) and writes the file when it stops; a run over several
test suites writes one file each, and ``python -m emulation.targets.embedded.coverage FILE...``
merges them into one report: how many statements were covered, and which were not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from control_plane.cli.args import write_json

ENV = "INART_P4_COVERAGE"
SCHEMA = "inart.p4coverage/1"


@dataclass(frozen=True)
class Point:
    """One statement: where it is in the P4 source, and what it is."""

    file: str
    line: int
    column: int
    kind: str  # primitive | condition | table
    fragment: str


class Coverage:
    """The statements compiled so far and whether each ran (one byte each, set by the
    generated code itself)."""

    def __init__(self) -> None:
        self.index: dict[Point, int] = {}
        self.hits = bytearray()

    def mark(self, ns: Any, source_info: dict[str, Any] | None, kind: str, ind: str
             ) -> list[str]:
        """The line that records ``source_info``'s statement as run (none without a
        location); ``ns`` is the pipeline's Namespace."""
        if not source_info:
            return []
        point = Point(str(source_info.get("filename", "?")), int(source_info.get("line", 0)),
                      int(source_info.get("column", 0)), kind,
                      " ".join(str(source_info.get("source_fragment", "")).split())[:120])
        k = self.index.get(point)
        if k is None:
            k = self.index[point] = len(self.hits)
            self.hits.append(0)
        return [ind + f"{ns.bind('COV', self.hits)}[{k}] = 1"]

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA,
                "points": [{**asdict(p), "hit": self.hits[k]} for p, k in self.index.items()]}

    def write(self, path: str | Path) -> None:
        write_json(path, self.to_dict())


_recorder: Coverage | None = None


def recorder() -> Coverage | None:
    """The process's Coverage when ``$INART_P4_COVERAGE`` asks for one, else None."""
    global _recorder
    if _recorder is None and os.environ.get(ENV):
        _recorder = Coverage()
    return _recorder


def write_if_recording() -> str | None:
    """Write the process's coverage to ``$INART_P4_COVERAGE``; the path, or None."""
    path = os.environ.get(ENV)
    if _recorder is None or not path:
        return None
    _recorder.write(path)
    return path


def merge(docs: list[dict[str, Any]]) -> dict[Point, int]:
    """Every statement of the given coverage files, hit if any run hit it."""
    out: dict[Point, int] = {}
    for doc in docs:
        if doc.get("schema") != SCHEMA:
            raise ValueError(f"schema {doc.get('schema')!r}: expected {SCHEMA!r}")
        for p in doc["points"]:
            point = Point(p["file"], p["line"], p["column"], p["kind"], p["fragment"])
            out[point] = max(out.get(point, 0), int(p["hit"]))
    return out


def summary(points: dict[Point, int]) -> dict[str, Any]:
    """Totals, by kind, and the statements not covered (in source order)."""
    missed = sorted((p for p, hit in points.items() if not hit),
                    key=lambda p: (p.file, p.line, p.column, p.kind))
    kinds = sorted({p.kind for p in points})
    return {"statements": len(points), "covered": len(points) - len(missed),
            "percent": round(100.0 * (len(points) - len(missed)) / max(1, len(points)), 1),
            "by_kind": {k: [sum(1 for p, h in points.items() if p.kind == k and h),
                            sum(1 for p in points if p.kind == k)] for k in kinds},
            "uncovered": [asdict(p) for p in missed]}


def report(s: dict[str, Any]) -> str:
    lines = [f"P4 statement coverage: {s['covered']}/{s['statements']} ({s['percent']}%)",
             "  " + ", ".join(f"{k} {c}/{t}" for k, (c, t) in s["by_kind"].items())]
    lines += [f"  not covered: {p['file']}:{p['line']}:{p['column']} {p['kind']}: "
              f"{p['fragment']}" for p in s["uncovered"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulation.targets.embedded.coverage",
                                 description="Merge the embedded target's P4 statement "
                                             "coverage files and report.")
    ap.add_argument("files", nargs="+", type=Path, metavar="FILE")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)
    try:
        docs = [json.loads(f.read_text()) for f in args.files]
        s = summary(merge(docs))
    except (OSError, ValueError, KeyError) as exc:
        print(f"coverage: error: {exc}", file=sys.stderr)
        return 2
    try:
        print(json.dumps(s, indent=1) if args.json else report(s))
    except BrokenPipeError:  # a reader that stopped early (| head)
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
