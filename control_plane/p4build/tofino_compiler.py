"""Which Tofino compiler builds the TNA program, and how to run it.

Two kinds work: Intel's SDE ships ``bf-p4c`` (a driver with the back end and assembler
installed beside it), and p4c's open-source Tofino back end, which builds ``p4c-barefoot``
and the assembler ``bfas`` inside a p4c build tree.  An installed open-source back end is
driven by p4c's own driver (``p4c`` with ``p4c-barefoot`` beside it); a build tree whose
driver was not set up for Tofino (only ``make p4c-barefoot bfas`` was run) is staged: a
private directory gets a copy of the tree's driver, the Tofino driver files and include
files from its sources, and links to the two binaries, laid out as p4c's ``linkp4cbarefoot``
target would lay them out in the tree, which stays untouched.  ``build-info.json`` records
the kind (``compiler_kind``) beside the version.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from control_plane.p4build.sources import BuildError

SDE = "Intel SDE bf-p4c"
OPEN_SOURCE = "open-source p4c-barefoot"
DRIVERS = ("bf-p4c", "p4c")  # the SDE's driver, or p4c's driver with p4c-barefoot beside it
DEFAULT_PREFIX = Path("/opt/p4/bin")
# inside a p4c build tree (CMake binary dir) and its source tree
TREE_BACKEND = Path("backends/tofino/bf-p4c/p4c-barefoot")
TREE_ASSEMBLER = Path("backends/tofino/bf-asm/bfas")
SRC_DRIVER = Path("backends/tofino/bf-p4c/driver")
SRC_INCLUDES = (Path("p4include"), Path("backends/tofino/bf-p4c/p4include"))
SRC_SCRIPTS = {"bfrt_schema.py": Path("backends/tofino/compiler_interfaces/schemas/bfrt_schema.py"),
               "p4c-gen-conf": Path("backends/tofino/scripts/p4c-gen-conf"),
               # the driver's summary logs (mau.resources.log, metrics.json) and their modules
               "p4c-build-logs": Path("backends/tofino/compiler_interfaces/p4c-build-logs"),
               "tools": Path("backends/tofino/compiler_interfaces/tools")}
_SOURCE_DIR = re.compile(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.+)$", re.M)
# the Tofino driver keeps find_file's Path results and later calls str methods on them
_FIND_FILE = re.compile(r"^([ \t]*\w+ = )(find_file\(.*\))[ \t]*$", re.M)


@dataclass(frozen=True)
class TofinoCompiler:
    """A driver to run (``driver --target tofino --arch tna ...``) and what it is."""

    driver: str
    kind: str
    # for a p4c build tree: its source tree's uncommitted changes (``git status`` lines) and
    # the sha256 of their diff, so a build says which local patches made it
    changes: tuple[str, ...] = ()
    changes_sha256: str = ""


def kind_of(driver: str) -> str:
    """SDE for a bf-p4c driver, open source for p4c's driver with p4c-barefoot beside it."""
    path = Path(driver)
    if path.name == "bf-p4c":
        return SDE
    if (path.parent / "p4c-barefoot").exists():
        return OPEN_SOURCE
    raise BuildError(f"'{driver}' is neither bf-p4c nor p4c with p4c-barefoot beside it")


def is_build_tree(path: Path) -> bool:
    return (path / "CMakeCache.txt").is_file() and (path / TREE_BACKEND).exists()


def _candidates() -> Iterator[str]:
    for name in DRIVERS:
        yield from filter(None, (shutil.which(name), str(DEFAULT_PREFIX / name)))
    if os.environ.get("SDE_INSTALL"):
        yield str(Path(os.environ["SDE_INSTALL"]) / "bin" / "bf-p4c")


@contextmanager
def open_compiler(explicit: str | None = None) -> Iterator[TofinoCompiler]:
    """The Tofino compiler: ``explicit`` (a driver, or a p4c build tree with the back end
    built), else bf-p4c or p4c (with p4c-barefoot beside it) on PATH, in /opt/p4/bin or in
    $SDE_INSTALL/bin.  A build tree is staged for the duration of the ``with``."""
    if explicit:
        tree = Path(explicit)
        if tree.is_file() and tree.name == "p4c" and is_build_tree(tree.parent):
            tree = tree.parent
        if tree.is_dir():
            if not is_build_tree(tree):
                raise BuildError(f"'{explicit}' is a directory but not a p4c build tree with "
                                 f"the Tofino back end built ({TREE_BACKEND} missing)")
            changes, digest = source_changes(tree_sources(tree))
            with tempfile.TemporaryDirectory(prefix="inart-tofino-driver-") as tmp:
                yield TofinoCompiler(str(stage_build_tree(tree, Path(tmp))), OPEN_SOURCE,
                                     changes, digest)
            return
        found = shutil.which(explicit)
        if found is None:
            raise BuildError(f"Tofino back end not found at '{explicit}'")
        yield TofinoCompiler(found, kind_of(found))
        return
    for found in _candidates():
        if Path(found).exists():
            try:
                yield TofinoCompiler(found, kind_of(found))
                return
            except BuildError:
                continue
    raise BuildError("the Tofino back end of p4c (p4c-barefoot, driven by bf-p4c or p4c) is not "
                     "on PATH, in /opt/p4/bin or in $SDE_INSTALL/bin: build p4c with "
                     "-DENABLE_TOFINO=ON (README) and give BF_P4C=/path/to/p4c/build, or give "
                     "BF_P4C=/path/to/bf-p4c")


def tree_sources(tree: Path) -> Path:
    """The p4c source tree a build tree was configured from (its CMakeCache.txt says)."""
    m = _SOURCE_DIR.search((tree / "CMakeCache.txt").read_text(errors="replace"))
    if not m:
        raise BuildError(f"{tree / 'CMakeCache.txt'}: no CMAKE_HOME_DIRECTORY")
    return Path(m.group(1).strip())


def source_changes(src: Path) -> tuple[tuple[str, ...], str]:
    """The uncommitted changes of a p4c source tree (``git status --porcelain`` lines of
    tracked files) and the sha256 of their diff; nothing when it is not a git checkout."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(src), *args], capture_output=True, timeout=120)
    status = git("status", "--porcelain", "--untracked-files=no")
    if status.returncode != 0:
        return (), ""
    lines = tuple(sorted(line.strip() for line in status.stdout.decode().splitlines()
                         if line.strip()))
    modified = [line.split(maxsplit=1)[1] for line in lines if line.startswith("M")]
    diff = git("diff", "--", *modified).stdout if modified else b""
    return lines, hashlib.sha256(diff).hexdigest() if modified else ""


def stage_build_tree(tree: Path, dest: Path) -> Path:
    """Lay out a Tofino driver for the build tree ``tree`` in ``dest``; the driver's path."""
    src = tree_sources(tree)
    # p4c_src/main.py: the driver's package, copied in by the build (configure makes the folder)
    needed = [tree / "p4c", tree / "p4c_src" / "main.py", tree / TREE_BACKEND,
              tree / TREE_ASSEMBLER,
              src / SRC_DRIVER / "barefoot.py", src / SRC_DRIVER / "p4c.tofino.cfg",
              *(src / d for d in SRC_INCLUDES), *(src / p for p in SRC_SCRIPTS.values())]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        raise BuildError(f"p4c build tree {tree} lacks what the Tofino driver needs: "
                         f"{', '.join(missing)} (build the targets p4c_driver, p4c-barefoot "
                         f"and bfas)")
    shutil.copy2(tree / "p4c", dest / "p4c")
    shutil.copytree(tree / "p4c_src", dest / "p4c_src")
    for name in ("barefoot.py", "p4c.tofino.cfg"):
        text = (src / SRC_DRIVER / name).read_text()
        if name == "barefoot.py":
            text = _FIND_FILE.sub(r"\1str(\2)", text)
        else:  # as p4c's release build does: no PSA on Tofino
            text = "".join(line for line in text.splitlines(keepends=True)
                           if "psa_target" not in line)
        (dest / "p4c_src" / name).write_text(text)
    for include in SRC_INCLUDES:
        shutil.copytree(src / include, dest / "p4include", dirs_exist_ok=True)
    links = {"p4c-barefoot": tree / TREE_BACKEND, "bfas": tree / TREE_ASSEMBLER,
             **{name: src / rel for name, rel in SRC_SCRIPTS.items()}}
    for name, target in links.items():
        (dest / name).symlink_to(target.resolve())
    return dest / "p4c"


def compiler_version(driver: str) -> str:
    out = subprocess.run([driver, "--version"], capture_output=True, text=True, timeout=60)
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[-1] if out.returncode == 0 and text else "?"
