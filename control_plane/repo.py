"""Where inart's own files are, and how a child process finds its packages.

One place for both, so moving a module never breaks a path and every launcher (switches,
PSs, workers, benches) starts its children the same way.  inart runs from a checkout and from
an installed wheel: ``REPO`` is the directory that holds the packages (the checkout, or
site-packages), and the files the commands read -- the committed P4 builds and the PTF suite --
are found in the checkout when there is one, else in the package data the wheel carries
(setup.py copies them into ``control_plane/data/``).  Nothing here depends on the cwd.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHECKOUT: Path | None = REPO if (REPO / "pyproject.toml").is_file() else None
DATA = REPO / "control_plane" / "data"  # in a wheel: the checkout's files the commands read
# what setup.py copies into a wheel's DATA: checkout path -> name under DATA
PACKAGE_DATA = {"p4src/build": "p4build", "tests/ptf": "ptf", "tests/ptf_testgen": "ptf_testgen"}
P4_BUILD = REPO / "p4src" / "build" if CHECKOUT else DATA / "p4build"
PTF_SUITE = REPO / "tests" / "ptf" if CHECKOUT else DATA / "ptf"
PTF_TESTGEN = REPO / "tests" / "ptf_testgen" if CHECKOUT else DATA / "ptf_testgen"
# a running emulation's switches (P4Runtime address, device id): `inart shell` and `inart ctl
# topology` find them here; written and removed by the emulation (emulation/runs/emulate.py)
EMULATION_STATE = Path("/tmp/inart-emulation.json")
OUT = Path("out")  # every run's outputs go under ./out/<command> unless --out says otherwise


class NeedsCheckout(RuntimeError):
    """A file only a repository checkout has (sources, test programs) was asked for."""


def checkout_path(relative: str, what: str) -> Path:
    """``relative`` inside the checkout; NeedsCheckout naming ``what`` needs it when inart
    runs from an installed package."""
    if CHECKOUT is None:
        raise NeedsCheckout(f"{what} needs a checkout of the inart repository ({relative}); "
                            f"this inart is an installed package at {REPO}")
    return CHECKOUT / relative


def out_dir(name: str) -> Path:
    """Default output directory of one command (``out/`` is git-ignored)."""
    return OUT / name


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment with the packages' directory first on PYTHONPATH (plus
    ``extra``): a child finds the same inart as its parent, whatever its cwd.

    Children run in the caller's cwd (paths the user gave mean what they meant), so
    PYTHONSAFEPATH keeps ``python -m`` from putting that cwd first on sys.path, where a
    directory named like one of the packages would shadow it.
    """
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONSAFEPATH": "1", **extra}
