"""The committed p4c build of the INA program (p4src/build/) and how to remake it.

p4c is not installable from package registries, so its outputs (bmv2 JSON, P4Info) are
committed together with ``build-info.json``: N, the slot-pool size, the event-counter indexes
(parsed from p4src/common/constants.p4, where alone they are written) and the sha256 of the
sources.  Hosts and the controller read N and the counter indexes from here; a test fails
when the sources change but the build was not remade (``make p4``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from control_plane.repo import REPO

P4SRC = REPO / "p4src"
BUILD_DIR = P4SRC / "build"
SOURCE_DIRS = ("common", "v1model")
MAIN_SOURCE = P4SRC / "v1model" / "inart.p4"
MAIN_REL = MAIN_SOURCE.relative_to(REPO).as_posix()
CONSTANTS = P4SRC / "common" / "constants.p4"
BMV2_JSON = "inart.json"
P4INFO = "inart.p4info.txtpb"
BUILD_INFO = "build-info.json"
DEFAULT_P4C = "/opt/p4/bin/p4c"

_DEFINE = re.compile(r"^#define\s+([A-Z_][A-Z0-9_]*)\s+(\d+)\s*$", re.M)
_INA_N = re.compile(r"^#ifndef INA_N\s*\n#define INA_N\s+(\d+)\s*$", re.M)


class BuildError(RuntimeError):
    """The P4 build is missing, stale, or p4c failed; the message says which and why."""


def source_files(root: Path = P4SRC, dirs: tuple[str, ...] = SOURCE_DIRS) -> list[Path]:
    """Every P4 source a program is built from (``dirs`` under ``root``), in a fixed order."""
    files = [p for d in dirs for p in sorted((root / d).glob("*.p4"))]
    if not files:
        raise BuildError(f"no P4 sources under {root}/{{{','.join(dirs)}}}")
    return files


def sources_sha256(root: Path = P4SRC, dirs: tuple[str, ...] = SOURCE_DIRS) -> str:
    """sha256 over (relative path, contents) of every source, so renames also count."""
    digest = hashlib.sha256()
    for path in source_files(root, dirs):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Constants:
    """The numbers of p4src/common/constants.p4 that hosts and the controller need."""

    n: int
    slots: int
    events: dict[str, int]
    event_counter_size: int


def read_constants(path: Path = CONSTANTS) -> Constants:
    """Parse N, the pool size and the event-counter indexes from the P4 constants file."""
    text = path.read_text()
    m = _INA_N.search(text)
    if not m:
        raise BuildError(f"{path}: no '#ifndef INA_N / #define INA_N <number>' default")
    defines = {name: int(value) for name, value in _DEFINE.findall(text)}
    for name in ("INA_SLOTS", "EV_COUNT"):
        if name not in defines:
            raise BuildError(f"{path}: missing '#define {name} <number>'")
    events = {
        name[3:].lower(): value
        for name, value in defines.items()
        if name.startswith("EV_") and name != "EV_COUNT"
    }
    if len(set(events.values())) != len(events) or max(events.values()) >= defines["EV_COUNT"]:
        raise BuildError(f"{path}: EV_* indexes must be distinct and below EV_COUNT")
    return Constants(int(m.group(1)), defines["INA_SLOTS"], events, defines["EV_COUNT"])


def load_build_info(build_dir: Path = BUILD_DIR) -> dict:
    """The recorded metadata of the committed build (N, counters, hashes)."""
    path = build_dir / BUILD_INFO
    if not path.exists():
        raise BuildError(f"{path} is missing: run 'make p4' (needs p4c)")
    return json.loads(path.read_text())


def artifact_paths(build_dir: Path = BUILD_DIR) -> tuple[Path, Path]:
    """(bmv2 JSON, P4Info text) of the committed build."""
    return build_dir / BMV2_JSON, build_dir / P4INFO


def check_fresh(build_dir: Path = BUILD_DIR, root: Path = P4SRC) -> None:
    """Raise BuildError unless the committed build matches today's sources and itself."""
    info = load_build_info(build_dir)
    current = sources_sha256(root)
    if info.get("sources_sha256") != current:
        raise BuildError(
            f"p4src sources changed (sha256 {current[:12]}..., build recorded "
            f"{str(info.get('sources_sha256'))[:12]}...): rebuild with 'make p4'"
        )
    for key, name in (("bmv2_json_sha256", BMV2_JSON), ("p4info_sha256", P4INFO)):
        if info.get(key) != file_sha256(build_dir / name):
            raise BuildError(f"{build_dir / name} differs from build-info.json '{key}'")


def p4c_version(p4c: str) -> str:
    out = subprocess.run([p4c, "--version"], capture_output=True, text=True, timeout=60)
    return (out.stdout or out.stderr).strip().splitlines()[-1] if out.returncode == 0 else "?"


def compile_program(p4c: str, build_dir: Path = BUILD_DIR) -> dict:
    """Run p4c on the v1model program, refuse any warning, and write the build + metadata."""
    if shutil.which(p4c) is None:
        raise BuildError(f"p4c not found at '{p4c}' (set P4C=/path/to/p4c)")
    consts = read_constants()
    with tempfile.TemporaryDirectory(prefix="inart-p4c-") as tmp:
        out_json = Path(tmp) / BMV2_JSON
        out_info = Path(tmp) / P4INFO
        cmd = [p4c, "--target", "bmv2", "--arch", "v1model", "--std", "p4-16",
               "-o", tmp, "--p4runtime-files", str(out_info),
               MAIN_REL]
        # relative source path from the repo root: the JSON's source_info then names files
        # the same way wherever the repository is checked out
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO)
        diagnostics = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            raise BuildError(f"p4c failed ({proc.returncode}):\n{diagnostics}")
        if re.search(r"warning", diagnostics, re.I):
            raise BuildError(f"p4c emitted warnings (the build must be warning-free):\n"
                             f"{diagnostics}")
        build_dir.mkdir(parents=True, exist_ok=True)
        # the JSON names p4c's preprocessed temp file; name the source instead so that
        # rebuilding unchanged sources reproduces the committed JSON byte for byte
        text = re.sub(r'^(\s*"program"\s*:\s*)"[^"\n]*"', rf'\g<1>"{MAIN_REL}"',
                      out_json.read_text(), count=1, flags=re.M)
        (build_dir / BMV2_JSON).write_text(text)
        shutil.copyfile(out_info, build_dir / P4INFO)
    info = {
        "schema": "inart.p4build/1",
        "program": "inart",
        "arch": "v1model",
        "N": consts.n,
        "slots": consts.slots,
        "event_counter": "InaIngress.events",
        "event_counter_size": consts.event_counter_size,
        "events": consts.events,
        "drop_events": sorted(k for k in consts.events if k.endswith("_drop")),
        "sources": [p.relative_to(P4SRC).as_posix() for p in source_files()],
        "sources_sha256": sources_sha256(),
        "bmv2_json": BMV2_JSON,
        "bmv2_json_sha256": file_sha256(build_dir / BMV2_JSON),
        "p4info": P4INFO,
        "p4info_sha256": file_sha256(build_dir / P4INFO),
        "p4c_version": p4c_version(p4c),
        "p4c_command": "p4c --target bmv2 --arch v1model --std p4-16 -o p4src/build "
                       f"--p4runtime-files p4src/build/{P4INFO} p4src/v1model/inart.p4",
    }
    (build_dir / BUILD_INFO).write_text(json.dumps(info, indent=2) + "\n")
    return info


def _run(arch: str, args: argparse.Namespace) -> str:
    """Check or rebuild one program; the line to print."""
    if arch == "tna":
        from control_plane import p4_build_tna  # the Tofino build's own module

        if args.check:
            p4_build_tna.check_fresh()
            return f"{p4_build_tna.TNA_BUILD_REL} is up to date"
        info = p4_build_tna.compile_program(args.bf_p4c)
        return (f"built {p4_build_tna.TNA_BUILD_REL} with {info['compiler_version']} "
                f"(N={info['N']}, {info['stages']} stages, sources sha256 "
                f"{info['sources_sha256'][:12]}...)")
    if args.check:
        check_fresh()
        return "p4src/build (v1model) is up to date"
    info = compile_program(args.p4c)
    return (f"built p4src/build with {info['p4c_version']} (N={info['N']}, "
            f"sources sha256 {info['sources_sha256'][:12]}...)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rebuild (or check) p4src/build: the bmv2 "
                                                 "build of p4src/v1model and the Tofino build "
                                                 "of p4src/tna.")
    parser.add_argument("--arch", choices=("v1model", "tna", "all"), default="all",
                        help="which program (default: %(default)s)")
    parser.add_argument("--p4c", default=os.environ.get("P4C", DEFAULT_P4C),
                        help="p4c executable (default: $P4C or %(default)s)")
    parser.add_argument("--bf-p4c", default=os.environ.get("BF_P4C"),
                        help="the Tofino back end's driver (default: $BF_P4C, else "
                             "p4c-barefoot or bf-p4c on PATH or in /opt/p4/bin)")
    parser.add_argument("--check", action="store_true",
                        help="only check that the committed build matches the sources")
    args = parser.parse_args(argv)
    arches = ("v1model", "tna") if args.arch == "all" else (args.arch,)
    status = 0
    for arch in arches:
        try:
            print(_run(arch, args))
        except BuildError as exc:
            print(f"error: {arch}: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    # through the package, so this module and p4_build_tna share one BuildError class
    from control_plane.p4_build import main as package_main

    sys.exit(package_main())
