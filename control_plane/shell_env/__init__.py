"""p4runtime-shell's private environment: a virtual environment of its own, prepared on first
use under ``$XDG_CACHE_HOME/inart/`` (default ``~/.cache/inart/``), in which `inart shell` and
`inart bench controller` run p4runtime-shell as a child process.

Why not in inart's own environment: p4runtime-shell pins ``protobuf<3.21`` and pulls PyPI's
``p4runtime`` (the top-level ``p4`` package, generated code that protobuf 4 and later refuse).
Installed beside inart it would either downgrade inart's protobuf or be broken by inart's;
here it gets exactly the versions it declares, and inart's environment keeps whatever protobuf
(3.20.3 up to 6.x) the user's other tools need.  Nothing here imports inart in the private
environment: the scripts it runs there (run_code.py, bench_writer.py) are standalone.

    python -m control_plane.shell_env          # prepare it now (./dev.sh setup does)

``INART_P4RUNTIME_SHELL_PYTHON=/path/to/python`` uses an interpreter that already has
p4runtime-shell instead (a machine without network access, a lab's own install).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SHELL_VERSION = "0.0.6"
# p4runtime-shell and what it declares, pinned to the versions it was released against, so the
# environment is the same wherever it is prepared.  googleapis-common-protos 1.73.0: the newest
# whose metadata still allows protobuf 3.20 (1.73.1 and later need protobuf >= 4.25.8).
REQUIREMENTS = (f"p4runtime-shell=={SHELL_VERSION}", "p4runtime==1.4.1", "protobuf==3.20.3",
                "googleapis-common-protos==1.73.0", "ipython==7.31.1", "jedi==0.17.2")
PYTHON_VAR = "INART_P4RUNTIME_SHELL_PYTHON"
READY = "inart-ready"  # written last: a folder without it is a preparation that was cut short
HERE = Path(__file__).resolve().parent
RUN_CODE = HERE / "run_code.py"
BENCH_WRITER = HERE / "bench_writer.py"


class ShellEnvError(RuntimeError):
    """The private environment could not be prepared; the message says why and what to do."""


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def env_dir() -> Path:
    """Where the environment lives: keyed by p4runtime-shell's version, the pinned
    requirements and the Python version, so a change of any gets a fresh one."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(" ".join(REQUIREMENTS).encode()).hexdigest()[:8]
    py = f"py{sys.version_info.major}{sys.version_info.minor}"
    return cache / "inart" / f"p4runtime-shell-{SHELL_VERSION}-{py}-{key}"


def _prepared(folder: Path) -> bool:
    """Marked ready, and its interpreter still resolves (a venv links to the Python that made
    it, which an upgrade may have removed: then it is prepared again)."""
    return (folder / READY).is_file() and (folder / "bin" / "python").exists()


def ready() -> Path | None:
    """The private environment's interpreter if it is prepared (or given), else None."""
    given = os.environ.get(PYTHON_VAR)
    if given:
        return Path(given)
    folder = env_dir()
    return folder / "bin" / "python" if _prepared(folder) else None


def python(say: Callable[[str], None] = _say) -> Path:
    """The interpreter that runs p4runtime-shell, preparing its environment on first use.

    Concurrent callers (two shells, parallel tests) wait for one preparation under a lock.
    """
    given = os.environ.get(PYTHON_VAR)
    if given:
        found = shutil.which(given)
        if found is None:
            raise ShellEnvError(f"{PYTHON_VAR}={given}: not an executable Python interpreter")
        return Path(found)
    folder = env_dir()
    if _prepared(folder):
        return folder / "bin" / "python"
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        lock = open(folder.parent / f"{folder.name}.lock", "w")
    except OSError as exc:
        raise ShellEnvError(f"cannot create {folder.parent} for p4runtime-shell's environment "
                            f"({exc.strerror}): set XDG_CACHE_HOME to a writable folder, or "
                            f"{PYTHON_VAR} to a Python that has p4runtime-shell") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _prepared(folder):
            _prepare(folder, say)
    return folder / "bin" / "python"


def _run(cmd: list[str], what: str, folder: Path) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        raise ShellEnvError(f"{what} failed ({lines[-1]}); preparing p4runtime-shell's "
                            f"environment needs PyPI or a pip index, or set {PYTHON_VAR} to a "
                            f"Python that has p4runtime-shell=={SHELL_VERSION}")


def _prepare(folder: Path, say: Callable[[str], None]) -> None:
    """A fresh venv with REQUIREMENTS, marked ready only once pip succeeded."""
    started = time.monotonic()
    say(f"inart: preparing p4runtime-shell {SHELL_VERSION} in {folder} "
        f"(first use only: a virtual environment of its own, about a minute)")
    shutil.rmtree(folder, ignore_errors=True)
    _run([sys.executable, "-m", "venv", str(folder)],
         "creating the virtual environment (Debian: apt-get install python3-venv)", folder)
    bin_python = str(folder / "bin" / "python")
    _run([bin_python, "-m", "pip", "install", "--disable-pip-version-check", "-q",
          *REQUIREMENTS], f"pip install {REQUIREMENTS[0]} (and the versions it pins)", folder)
    _run([bin_python, "-I", "-c", "import p4runtime_sh.shell"],
         "importing p4runtime-shell in its new environment", folder)
    (folder / READY).write_text("\n".join(REQUIREMENTS) + "\n")
    say(f"inart: p4runtime-shell ready ({time.monotonic() - started:.0f} s)")


def main() -> int:
    """Prepare the environment (if needed) and print its interpreter."""
    try:
        print(python())
    except ShellEnvError as exc:
        print(f"inart: error: {exc}", file=sys.stderr)
        return 1
    return 0
