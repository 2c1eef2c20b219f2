"""Find the ``bfrt_grpc`` package (generated BF Runtime stubs) of the user's SDE.

An SDE installs it under ``$SDE_INSTALL/lib/python3.X/site-packages/tofino/bfrt_grpc``
(``bfruntime_pb2``, ``bfruntime_pb2_grpc``), or under ``lib64/`` where the Python that built
it keeps platform libraries there (CentOS, which open-p4studio also builds on: its cmake asks
distutils for the platform-specific library folder); inart never ships a copy.  ``$INART_BFRT_GRPC``
names another directory that holds a ``bfrt_grpc`` package: stubs regenerated from the SDE's
own ``bfruntime.proto`` where the SDE's were made by a protoc that inart's protobuf cannot
load (``regenerate_hint``), or the unit tests' stand-in.

The SDE's build generates the stubs with the protoc it built (open-p4studio 9.13.4: protobuf
3.25.3 on 64-bit hosts, whose output loads; 3.12.2 on 32-bit ones, whose output does not).
Output of a protoc older than 3.19 fails on protobuf 4 and later with "TypeError: Descriptors
cannot be created directly"; output newer than inart's protobuf fails its runtime version
check.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import google.protobuf
import grpc

try:
    from google.protobuf.runtime_version import VersionError
except ImportError:  # protobuf < 5.26 checks no gencode version, so it raises no such error

    class VersionError(Exception):  # type: ignore[no-redef]
        """Stands in for protobuf's gencode version error, which this protobuf lacks."""

# grpcio-tools 1.76.0 bundles protoc 31.1 (Python gencode 6.31.1): not older than 3.19, not
# newer than inart's protobuf 6.33
REGENERATE = """\
python3 -m venv /tmp/bfrt-gen && /tmp/bfrt-gen/bin/pip install grpcio-tools==1.76.0
STATUS=$({python} -c 'import google.rpc.status_pb2 as m; print(m.__file__)')
GOOGLEAPIS=${{STATUS%/google/rpc/status_pb2.py}}
PROTO=$SDE_INSTALL/share/bf_rt_shared/proto OUT=~/bfrt-stubs/bfrt_grpc
mkdir -p $OUT && touch $OUT/__init__.py
/tmp/bfrt-gen/bin/python -m grpc_tools.protoc -I $PROTO -I $GOOGLEAPIS \\
    --python_out $OUT --grpc_python_out $OUT $PROTO/bfruntime.proto
sed -i 's/^import bfruntime_pb2 as/from . import bfruntime_pb2 as/' $OUT/bfruntime_pb2_grpc.py
export INART_BFRT_GRPC=~/bfrt-stubs"""


SDE_LIBS = ("lib", "lib64")  # where an SDE's Python packages go, tried in this order


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
    return [d for lib in SDE_LIBS
            for d in sorted(Path(sde).glob(f"{lib}/python3*/site-packages/tofino"), reverse=True)]


def sde_missing(env: dict[str, str] | None = None) -> str | None:
    """Why the SDE's bfrt_grpc cannot be used here, or None when it can."""
    env = dict(os.environ) if env is None else env
    dirs = candidate_dirs(env)
    if not dirs:
        if not env.get("SDE_INSTALL"):
            return ("no Intel P4 Studio SDE: $SDE_INSTALL is not set (source the SDE's "
                    "environment script, e.g. the one open-p4studio's create-setup-script.sh "
                    "writes; or point $INART_BFRT_GRPC at a bfrt_grpc package)")
        return (f"$SDE_INSTALL={env['SDE_INSTALL']} has no "
                f"{{{','.join(SDE_LIBS)}}}/python3*/site-packages/tofino (an SDE built without "
                f"BF Runtime gRPC?)")
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
            except (ImportError, TypeError, VersionError, RuntimeError) as exc:
                # TypeError: protoc < 3.19; VersionError: protoc newer than our protobuf;
                # RuntimeError: grpc stubs newer than our grpcio
                raise SdeError(f"cannot import bfrt_grpc from {d}: {type(exc).__name__}: "
                               f"{_first_line(exc)}\n{regenerate_hint()}") from None
            return BfrtStubs(pb2, stub, d)
    raise SdeError("bfrt_grpc not found")  # sde_missing() said it was there


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


def regenerate_hint() -> str:
    """What to do when the SDE's stubs do not load here: regenerate them from the SDE's own
    proto with a protoc that suits inart's protobuf, the exact commands."""
    return (f"inart's protobuf ({google.protobuf.__version__}) loads stubs generated by protoc "
            f"3.19 or newer, up to its own version, and its grpcio ({grpc.__version__}) gRPC "
            f"stubs of its version or older.  The SDE's build makes them with the protoc it "
            f"built: open-p4studio 9.13.4's 64-bit build (protobuf 3.25.3) loads as "
            f"installed; its 32-bit build (protobuf 3.12.2) and any SDE built with a protobuf "
            f"older than 3.19 need them regenerated.  Regenerate them from the SDE's own "
            f"bfruntime.proto (grpcio-tools 1.76.0's need grpcio 1.76 or newer) and point "
            f"$INART_BFRT_GRPC at them (docs/tofino.md):\n"
            + REGENERATE.format(python=sys.executable))
