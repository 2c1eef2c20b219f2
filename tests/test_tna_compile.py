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
from control_plane.repo import REPO, child_env

TRIAL = REPO / "p4src" / "tna-n64" / "inart.p4"

# What bf-p4c writes, cut to the parts the build reads; STAGES and WARN are filled in.
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
    pathlib.Path(name).write_bytes(b"p4info")
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
if WARN:
    print("warning: something the build does not allow")
'''


def _driver(tmp_path: Path, stages: int = 3, warn: bool = False) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    driver = bindir / "p4c"
    driver.write_text(DRIVER.replace("STAGES", str(stages)).replace("WARN", str(warn)))
    driver.chmod(0o755)
    (bindir / "p4c-barefoot").write_text("")
    return driver


def test_a_trial_build_of_another_source(tmp_path):
    driver = _driver(tmp_path)
    out = tmp_path / "trial"
    info = tna.compile_program(str(driver), out, TRIAL)
    args = json.loads((driver.parent / "argv.json").read_text())
    assert args[-1] == "p4src/tna-n64/inart.p4"
    assert args[:4] == ["--target", "tofino", "--arch", "tna"]
    assert info["N"] == 64 and info["stages"] == 3
    assert info["compiler_kind"] == tc.OPEN_SOURCE
    assert info["compiler_version"] == "p4c 1.2.5.16 (SHA: stand-in)"
    assert info["compiler_command"].endswith(" p4src/tna-n64/inart.p4")
    assert json.loads((out / "build-info.json").read_text()) == info
    assert "fits one pipe: yes (3 of 12 MAU stages" in (out / "resources.txt").read_text()
    for key, name in tna.ARTIFACTS.items():
        assert (out / name).is_file(), key


def test_more_than_twelve_stages_is_refused(tmp_path):
    with pytest.raises(BuildError, match="does not fit one pipe"):
        tna.compile_program(str(_driver(tmp_path, stages=13)), tmp_path / "out", TRIAL)
    assert not (tmp_path / "out").exists()


def test_a_compiler_warning_is_refused(tmp_path):
    with pytest.raises(BuildError, match="emitted warnings"):
        tna.compile_program(str(_driver(tmp_path, warn=True)), tmp_path / "out", TRIAL)


def test_a_trial_source_needs_its_own_directory():
    proc = subprocess.run([sys.executable, "-m", "control_plane.p4build", "--arch", "tna",
                           "--tna-source", str(TRIAL)], cwd=REPO, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "--tna-source needs --tna-out" in proc.stderr
