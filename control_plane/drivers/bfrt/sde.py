"""Find the ``bfrt_grpc`` package (generated BF Runtime stubs) of the user's SDE.

An SDE installs it under ``$SDE_INSTALL/lib/python3.X/site-packages/tofino/bfrt_grpc``
(``bfruntime_pb2``, ``bfruntime_pb2_grpc``); inart never ships a copy.  ``$INART_BFRT_GRPC``
names another directory that holds a ``bfrt_grpc`` package (the unit tests' stand-in).
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


class SdeError(RuntimeError):
    """No usable SDE; the message says what is missing and how to point inart at it."""


@dataclass(frozen=True)
class BfrtStubs:
    """The SDE's generated protobuf messages and gRPC stub for BF Runtime."""

    pb2: ModuleType
    grpc: ModuleType
    origin: Path


def candidate_dirs(env: dict[str, str] | None = None) -> list[Path]:
    """Directories that may hold a ``bfrt_grpc`` package, in the order they are tried."""
    env = dict(os.environ) if env is None else env
    if env.get("INART_BFRT_GRPC"):
        return [Path(env["INART_BFRT_GRPC"])]
    sde = env.get("SDE_INSTALL")
    if not sde:
        return []
    return sorted(Path(sde).glob("lib/python3*/site-packages/tofino"), reverse=True)


def sde_missing(env: dict[str, str] | None = None) -> str | None:
    """Why the SDE's bfrt_grpc cannot be used here, or None when it can."""
    env = dict(os.environ) if env is None else env
    dirs = candidate_dirs(env)
    if not dirs:
        if not env.get("SDE_INSTALL"):
            return "no Intel P4 Studio SDE: $SDE_INSTALL is not set (source the SDE's set_sde.sh)"
        return (f"$SDE_INSTALL={env['SDE_INSTALL']} has no lib/python3*/site-packages/tofino "
                f"(an SDE built without BF Runtime gRPC?)")
    if not any((d / "bfrt_grpc" / "bfruntime_pb2.py").is_file() for d in dirs):
        return f"no bfrt_grpc/bfruntime_pb2.py under {', '.join(map(str, dirs))}"
    return None


def load_stubs(env: dict[str, str] | None = None) -> BfrtStubs:
    """Import the SDE's ``bfrt_grpc.bfruntime_pb2`` and ``bfruntime_pb2_grpc``."""
    problem = sde_missing(env)
    if problem:
        raise SdeError(problem)
    for d in candidate_dirs(env):
        if (d / "bfrt_grpc" / "bfruntime_pb2.py").is_file():
            if str(d) not in sys.path:
                sys.path.insert(0, str(d))
            try:
                pb2 = importlib.import_module("bfrt_grpc.bfruntime_pb2")
                stub = importlib.import_module("bfrt_grpc.bfruntime_pb2_grpc")
            except ImportError as exc:  # e.g. the SDE's protobuf is newer than ours
                raise SdeError(f"cannot import bfrt_grpc from {d}: {exc}") from None
            return BfrtStubs(pb2, stub, d)
    raise SdeError("bfrt_grpc not found")  # sde_missing() said it was there
