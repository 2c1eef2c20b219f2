"""Regenerate the P4Runtime stubs under control_plane/p4runtime_api/p4 from the .proto files
there (README.md beside this file):

    python -m control_plane.p4runtime_api.generate [--out DIR]

protoc writes imports for the canonical layout (``from p4.v1 import p4data_pb2``) and names
the modules ``p4.v1.p4runtime_pb2``; both are rewritten to inart's import name, so that the
stubs never depend on, or collide with, a top-level ``p4`` package (PyPI's ``p4runtime``).
The .proto file names (``p4/v1/p4runtime.proto``) stay canonical: ``-I`` is this folder.
Needs protoc and grpc_python_plugin (Debian: protobuf-compiler, protobuf-compiler-grpc).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "control_plane.p4runtime_api"
PROTOS = ("p4/v1/p4runtime.proto", "p4/v1/p4data.proto", "p4/config/v1/p4info.proto",
          "p4/config/v1/p4types.proto")
# `from p4.v1 import x_pb2` and `import p4.v1.x_pb2` (protoc's two styles), and the module
# name protoc passes to the builder ('p4.v1.p4runtime_pb2'), which sets __module__
_IMPORT = re.compile(r"^(from|import) p4\.", re.MULTILINE)
_MODULE = re.compile(r"(BuildTopDescriptorsAndMessages\(DESCRIPTOR, ')p4\.")


class GenerateError(RuntimeError):
    """protoc or its gRPC plugin is missing or failed."""


def tools() -> tuple[str, str]:
    """(protoc, grpc_python_plugin) paths; GenerateError says what to install if absent."""
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if protoc is None or plugin is None:
        raise GenerateError("protoc and grpc_python_plugin are needed (Debian: apt-get install "
                            "protobuf-compiler protobuf-compiler-grpc)")
    return protoc, plugin


def rewrite(text: str) -> str:
    """protoc's output with every ``p4.`` module path moved under inart's package."""
    return _MODULE.sub(rf"\g<1>{PACKAGE}.p4.", _IMPORT.sub(rf"\1 {PACKAGE}.p4.", text))


def generate(out: Path) -> list[Path]:
    """Write the stubs (and the packages' empty __init__.py) under ``out``/p4; returns the
    generated *_pb2*.py files."""
    import google.rpc.status_pb2  # holds google/rpc/status.proto, which p4runtime.proto imports

    protoc, plugin = tools()
    googleapis = Path(google.rpc.status_pb2.__file__).parents[2]
    done = subprocess.run([protoc, "-I", str(HERE), "-I", str(googleapis), f"--python_out={out}",
                           f"--grpc_out={out}", f"--plugin=protoc-gen-grpc={plugin}", *PROTOS],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise GenerateError(f"protoc failed: {done.stderr.strip()}")
    files = sorted((out / "p4").rglob("*_pb2*.py"))
    for path in files:
        path.write_text(rewrite(path.read_text()))
    for folder in ("p4", "p4/v1", "p4/config", "p4/config/v1"):
        (out / folder / "__init__.py").touch()
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m control_plane.p4runtime_api.generate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE,
                        help="write the stubs under this folder (default: in place)")
    args = parser.parse_args(argv)
    try:
        files = generate(args.out)
    except GenerateError as exc:
        print(f"generate: error: {exc}", file=sys.stderr)
        return 2
    print(f"{len(files)} stubs written under {args.out / 'p4'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
