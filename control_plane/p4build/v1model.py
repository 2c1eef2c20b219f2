"""The committed p4c build of the INA program (p4src/build/) and how to remake it.

p4c is not installable from package registries, so its outputs (bmv2 JSON, P4Info) are
committed together with ``build-info.json``: N, the slot-pool size, the event-counter indexes
(parsed from p4src/common/constants.p4, where alone they are written) and the sha256 of the
sources.  Hosts and the controller read N and the counter indexes from here; a test fails
when the sources change but the build was not remade (``make p4``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

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
from control_plane.repo import REPO

MAIN_SOURCE = P4SRC / "v1model" / "inart.p4"
MAIN_REL = MAIN_SOURCE.relative_to(REPO).as_posix()
BMV2_JSON = "inart.json"
P4INFO = "inart.p4info.txtpb"
DEFAULT_P4C = "/opt/p4/bin/p4c"


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
