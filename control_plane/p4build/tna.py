"""The committed Tofino build of the TNA program (p4src/build/tna/) and how to remake it.

The open-source Tofino back end of p4c (``p4c-barefoot``, also installed as ``bf-p4c``) is
built from source like p4c itself, so its outputs are committed: ``bfrt.json``,
``pipe/context.json``, ``pipe/tofino.bin``, the P4Info, ``resources.txt`` (stages, SRAM/TCAM,
PHV, hash units per stage, from the compiler's own resource report) and ``build-info.json``
(N, counters, the sha256 of p4src/common + p4src/tna and of every artifact).  A test fails
when the sources changed but the build was not remade (``make p4`` where the back end is on
PATH).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from control_plane.p4build.bfa_checks import PARSER_FIX, judge, parser_selects
from control_plane.p4build.sources import (
    BUILD_DIR,
    BUILD_INFO,
    P4SRC,
    BuildError,
    file_sha256,
    load_build_info,
    read_constants,
    source_files,
    sources_sha256,
)
from control_plane.p4build.tofino_compiler import compiler_version, open_compiler
from control_plane.p4build.tofino_resources import ResourceReport, read_report
from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2
from control_plane.repo import REPO

SOURCE_DIRS = ("common", "tna")
MAIN_SOURCE = P4SRC / "tna" / "inart.p4"
MAIN_REL = MAIN_SOURCE.relative_to(REPO).as_posix()
TNA_BUILD = BUILD_DIR / "tna"
TNA_BUILD_REL = TNA_BUILD.relative_to(REPO).as_posix()
# build-info key -> file under the build directory
ARTIFACTS = {
    "bfrt_json": "bfrt.json",
    "context_json": "pipe/context.json",
    "binary": "pipe/tofino.bin",
    "p4info": "inart.p4info.bin",  # binary: the text form has `Any`s only the SDE can parse
    "p4info_text": "inart.p4info.txtpb",  # for reading
    "resources": "resources.txt",
}
# the program's event counters: every counter whose name ends so (the ingress ones first)
EVENT_COUNTER_SUFFIX = "events"
_TNA_N = re.compile(r"^#ifndef INA_N\s*\n#define INA_N\s+(\d+)\s*$", re.M)
_WARNING = re.compile(r"\bwarning\b", re.I)
# Warnings that do not matter, with why.  Anything else fails the build, except the
# assembler's table-pair warnings that bfa_checks.judge finds harmless in the .bfa.
ALLOWED_WARNINGS = (
    # bf-p4c pads short parser paths to Tofino's minimum parse depth with a loop state it
    # makes itself; informational, nothing in the program to change
    re.compile(r"^warning: Parser state min_parse_depth_accept_loop will be unrolled"),
    # protobuf's logging inside the compiler while it writes the text P4Info: the TNA port
    # metadata extern is an `Any` it cannot print (the binary P4Info carries it whole)
    re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\) is called"),
    re.compile(r"^W\d+ .*text_format\.cc:\d+\] type\.googleapis\.com/barefoot\.PortMetadata: "
               r"failed to parse contents"),
)
# TNA parsers take their metadata as `out`; every field is set before it is read
# (in the parser or the control), which the front end cannot see.  Standard P4Runtime
# counters and registers in the P4Info (not Tofino's own extern messages): what Stratum and
# the project's P4Runtime driver read.
DISABLED = ("--Wdisable=uninitialized-out-param", "--p4runtime-force-std-externs")


def read_n(path: Path = MAIN_SOURCE) -> int:
    """N of the TNA program: its own ``#ifndef INA_N / #define INA_N`` (it holds fewer values
    per packet than the v1model default; docs/tofino.md says why)."""
    m = _TNA_N.search(path.read_text())
    if not m:
        raise BuildError(f"{path}: no '#ifndef INA_N / #define INA_N <number>'")
    return int(m.group(1))


def check_fresh(build_dir: Path = TNA_BUILD, root: Path = P4SRC) -> None:
    """Raise BuildError unless the committed TNA build matches today's sources and itself."""
    info = load_build_info(build_dir)
    current = sources_sha256(root, SOURCE_DIRS)
    if info.get("sources_sha256") != current:
        raise BuildError(
            f"p4src/common or p4src/tna changed (sha256 {current[:12]}..., the Tofino build "
            f"recorded {str(info.get('sources_sha256'))[:12]}...): rebuild with 'make p4' "
            f"(needs the Tofino back end of p4c)")
    for key, name in ARTIFACTS.items():
        path = build_dir / name
        if not path.is_file():
            raise BuildError(f"{path} is missing from the Tofino build")
        if info.get("artifacts", {}).get(key) != file_sha256(path):
            raise BuildError(f"{path} differs from build-info.json artifacts['{key}']")


def _rel(source: Path) -> str:
    """``source`` as the compiler is given it: relative to the checkout when inside it."""
    source = source.resolve()
    return source.relative_to(REPO).as_posix() if source.is_relative_to(REPO) else str(source)


def _compile(compiler: str, out: Path, source: Path = MAIN_SOURCE) -> str:
    """Run the back end into ``out``; its assembly (refused if it failed or warned)."""
    cmd = [compiler, "--target", "tofino", "--arch", "tna", "--std", "p4-16", "-g", *DISABLED,
           "-o", str(out), "--bf-rt-schema", str(out / "bfrt.json"),
           "--p4runtime-files",
           f"{out / ARTIFACTS['p4info']},{out / ARTIFACTS['p4info_text']}", _rel(source)]
    # the driver's scripts run on `python3` from PATH: a venv beside the prefix (where the
    # build put jsl, jsonschema, pyyaml, pyinstaller) goes first
    prefix = Path(compiler).parent
    paths = [str(p) for p in (prefix.parent / "venv" / "bin", prefix) if p.is_dir()]
    env = {**os.environ, "PATH": os.pathsep.join([*paths, os.environ.get("PATH", "")])}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=REPO, env=env)
    diagnostics = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise BuildError(f"the Tofino back end failed ({proc.returncode}):\n{diagnostics}")
    bfa = read_bfa(out)
    judged = judge(diagnostics, bfa)
    bad = [line for line in judged
           if (_WARNING.search(line) or line.startswith("W0"))
           and not any(p.match(line) for p in ALLOWED_WARNINGS)
           and not re.search(r"\d+ errors?, \d+ warnings? generated", line)]
    if bad:
        refused = "\n".join(bad)
        raise BuildError(f"the Tofino back end emitted warnings (the build must be free of "
                         f"them; known harmless ones are listed in ALLOWED_WARNINGS):\n"
                         f"{refused}\n\nall of its output:\n{diagnostics}")
    return bfa


def event_counters(p4info_bin: Path) -> list[str]:
    """The program's event counters, from its P4Info: the TNA program spreads the events
    over several (a counter per stage that counts), each indexed by the event's number."""
    info = p4info_pb2.P4Info()
    info.ParseFromString(p4info_bin.read_bytes())
    names = [c.preamble.name for c in info.counters
             if c.preamble.name.endswith(EVENT_COUNTER_SUFFIX)]
    if not names:
        raise BuildError(f"{p4info_bin}: no counter named '*{EVENT_COUNTER_SUFFIX}'")
    return sorted(names, key=lambda n: (not n.startswith("InaIngress."), n))


def read_bfa(out: Path) -> str:
    """The assembly the back end wrote into ``out`` (``pipe/<program>.bfa``)."""
    bfas = sorted((out / "pipe").glob("*.bfa"))
    if not bfas:
        raise BuildError(f"the Tofino back end wrote no .bfa in {out / 'pipe'}")
    return bfas[0].read_text()


def check_parser(bfa: str) -> int:
    """The number of parser states that select, after checking each kept its match (p4c's
    Tofino-1 parser match register bug drops them, warned or not)."""
    selecting, unmatched = parser_selects(bfa)
    if unmatched:
        raise BuildError(f"parser state(s) {', '.join(unmatched)} select among transitions "
                         f"without a match in the .bfa: p4c's Tofino-1 parser match "
                         f"register bug; use a back end with the fix {PARSER_FIX}")
    return selecting


def _install(tmp: Path, build_dir: Path, report: ResourceReport) -> None:
    """Replace ``build_dir`` with the artifacts of one compile."""
    if build_dir.exists():
        shutil.rmtree(build_dir)
    for name in ARTIFACTS.values():
        if name == ARTIFACTS["resources"]:
            continue
        (build_dir / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp / name, build_dir / name)
    (build_dir / ARTIFACTS["resources"]).write_text(report.text())


def compile_program(compiler: str | None = None, build_dir: Path = TNA_BUILD,
                    source: Path = MAIN_SOURCE) -> dict:
    """Compile p4src/tna (or another TNA ``source``, e.g. a layout on trial, into a
    ``build_dir`` of its own) with the Tofino back end and write the build and its
    metadata."""
    consts = read_constants()
    with (open_compiler(compiler) as found,
          tempfile.TemporaryDirectory(prefix="inart-bf-p4c-") as tmp_name):
        tmp = Path(tmp_name)
        selecting = check_parser(_compile(found.driver, tmp, source))
        counters = event_counters(tmp / ARTIFACTS["p4info"])
        report = read_report(tmp / "pipe")
        if not report.fits:
            raise BuildError(f"the TNA program does not fit one pipe:\n{report.text()}")
        _install(tmp, build_dir, report)
        version = compiler_version(found.driver)
    info = {
        "schema": "inart.p4build/1",
        "program": "inart",
        "arch": "tna",
        "target": "tofino",
        "N": read_n(source),
        "slots": consts.slots,
        "event_counter": counters[0],
        "event_counters": counters,
        "event_counter_size": consts.event_counter_size,
        "events": consts.events,
        "drop_events": sorted(k for k in consts.events if k.endswith("_drop")),
        "stages": report.stages_used,
        "parser_select_states": selecting,
        "sources": [p.relative_to(P4SRC).as_posix() for p in source_files(P4SRC, SOURCE_DIRS)],
        "sources_sha256": sources_sha256(P4SRC, SOURCE_DIRS),
        "artifacts": {key: file_sha256(build_dir / name) for key, name in ARTIFACTS.items()},
        "compiler_kind": found.kind,
        "compiler_version": version,
        **({"compiler_source_changes": list(found.changes),
            "compiler_source_changes_sha256": found.changes_sha256} if found.changes else {}),
        "compiler_command": f"p4c --target tofino --arch tna --std p4-16 -g "
                            f"{' '.join(DISABLED)} -o OUT --bf-rt-schema OUT/bfrt.json "
                            f"--p4runtime-files OUT/{ARTIFACTS['p4info']},"
                            f"OUT/{ARTIFACTS['p4info_text']} {_rel(source)}",
    }
    (build_dir / BUILD_INFO).write_text(json.dumps(info, indent=2) + "\n")
    return info
