"""The committed p4c outputs of the test programs were built from the current sources."""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent / "p4"


def test_build_matches_sources() -> None:
    spec = importlib.util.spec_from_file_location("p4build", HERE / "build.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    recorded = dict(line.split()[::-1] for line in
                    (HERE / "build" / "SOURCES.sha256").read_text().splitlines())
    assert recorded == mod.source_hashes(), \
        "tests/embedded/p4 sources changed: rerun tests/embedded/p4/build.py with p4c"
    for name in recorded:
        stem = name.removesuffix(".p4")
        assert (HERE / "build" / f"{stem}.json").exists()
        assert (HERE / "build" / f"{stem}.p4info.txt").exists()
