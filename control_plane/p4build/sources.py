"""The P4 sources of the INA program and the metadata every build of it records.

Shared by the bmv2 build (``v1model``) and the Tofino build (``tna``): where the sources are,
their hash (a test fails when they change without a rebuild), the constants hosts and the
controller read (N, pool size, event-counter indexes) and a build's ``build-info.json``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from control_plane.repo import P4_BUILD, REPO

P4SRC = REPO / "p4src"
BUILD_DIR = P4_BUILD
SOURCE_DIRS = ("common", "v1model")
CONSTANTS = P4SRC / "common" / "constants.p4"
BUILD_INFO = "build-info.json"

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


EVENTS_FALLBACK = {  # p4src/common/constants.p4; build-info.json wins when present
    "not_ipv4_drop": 0, "no_route_drop": 1, "ttl_expired_drop": 2, "malformed_drop": 3,
    "spoofed_bitmap_drop": 4, "duplicate_drop": 5, "absorbed_drop": 6, "aggregated_out": 7,
    "collision": 8, "retx_bypass": 9, "slot_out_of_pool": 10, "stale_reclaimed": 11,
    "overflow_out": 12, "result_multicast": 13,
}


def event_names() -> dict[str, int]:
    """Event counter name -> index of the compiled program."""
    try:
        events = json.loads((P4_BUILD / BUILD_INFO).read_text()).get("events")
        if isinstance(events, dict) and events:
            return {str(k): int(v) for k, v in events.items()}
    except (OSError, ValueError):
        pass
    return dict(EVENTS_FALLBACK)
