"""Where the repository's own files are, and how a child process finds its packages.

One place for both, so moving a module never breaks a path and every launcher (switches,
PSs, workers, benches) starts its children the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
P4_BUILD = REPO / "p4src" / "build"
OUT = Path("out")  # every run's outputs go under ./out/<command> unless --out says otherwise


def out_dir(name: str) -> Path:
    """Default output directory of one command (``out/`` is git-ignored)."""
    return OUT / name


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment with the repository first on PYTHONPATH (plus ``extra``)."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}
