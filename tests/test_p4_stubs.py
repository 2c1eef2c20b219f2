"""The committed P4Runtime stubs (control_plane/p4runtime_api, its README.md) are what protoc
makes of the committed p4runtime .proto files, under inart's own import name, and they run on
the project's protobuf (upb in the development venv; tests/test_wheel_beside_shell.py runs
them on p4runtime-shell's protobuf 3.20)."""

from __future__ import annotations

import ast
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from google.protobuf.internal import api_implementation
from google.rpc import code_pb2, status_pb2

from control_plane.p4runtime_api import generate
from control_plane.repo import REPO

STUBS = REPO / "control_plane" / "p4runtime_api"


def _tools_missing() -> str | None:
    try:
        generate.tools()
    except generate.GenerateError as exc:
        return str(exc)
    return None


@pytest.mark.skipif(_tools_missing() is not None,
                    reason=f"the committed stubs are used as they are: {_tools_missing()}")
def test_committed_stubs_match_the_protos(tmp_path: Path) -> None:
    fresh = sorted(p.relative_to(tmp_path) for p in generate.generate(tmp_path))
    assert fresh == sorted(p.relative_to(STUBS) for p in (STUBS / "p4").rglob("*_pb2*.py"))
    for rel in fresh:
        assert (tmp_path / rel).read_text() == (STUBS / rel).read_text(), \
            f"{rel} is stale: regenerate it (python -m control_plane.p4runtime_api.generate)"


def test_no_stub_imports_a_top_level_p4() -> None:
    """PyPI's p4runtime owns the import name `p4`: a stub that imported from it would load
    that package's (older, incompatible) code beside inart's."""
    for path in (STUBS / "p4").rglob("*.py"):
        tree = ast.parse(path.read_text())
        modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in modules if m and m.split(".")[0] == "p4"], path
    assert generate.rewrite("from p4.v1 import p4data_pb2 as x\n") == \
        "from control_plane.p4runtime_api.p4.v1 import p4data_pb2 as x\n"


def test_stubs_are_the_repositorys_and_run_on_upb() -> None:
    from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2
    from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    assert Path(p4runtime_pb2.__file__).resolve() == STUBS / "p4/v1/p4runtime_pb2.py"
    assert p4runtime_pb2.WriteRequest.__module__ == p4runtime_pb2.__name__
    assert p4runtime_pb2.DESCRIPTOR.name == "p4/v1/p4runtime.proto"  # the canonical file name
    assert api_implementation.Type() == "upb"
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    entry = update.entity.table_entry
    entry.table_id, entry.priority = 7, 3
    entry.match.add(field_id=1).exact.value = b"\x0a"
    entry.action.action.action_id = 9
    req = p4runtime_pb2.WriteRequest(device_id=1, updates=[update])
    assert p4runtime_pb2.WriteRequest.FromString(req.SerializeToString()) == req
    status = status_pb2.Status(code=code_pb2.INVALID_ARGUMENT)
    status.details.add().Pack(p4runtime_pb2.Error(canonical_code=code_pb2.NOT_FOUND))
    error = p4runtime_pb2.Error()
    assert status.details[0].Unpack(error) and error.canonical_code == code_pb2.NOT_FOUND
    info = text_format.Parse('tables { preamble { id: 7 name: "t" } }', p4info_pb2.P4Info())
    assert info.tables[0].preamble.name == "t"
    with grpc.insecure_channel("127.0.0.1:1") as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        assert callable(stub.Write) and callable(stub.StreamChannel)
