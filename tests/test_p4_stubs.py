"""The committed P4Runtime stubs (the top-level `p4` package, p4/README.md) are what protoc
makes of the committed p4runtime .proto files, they run on the project's protobuf (6.x, upb),
and no other `p4` package (PyPI's p4runtime) shadows them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from google.protobuf.internal import api_implementation
from google.rpc import code_pb2, status_pb2

from control_plane.repo import REPO

PROTOS = ("p4/v1/p4runtime.proto", "p4/v1/p4data.proto", "p4/config/v1/p4info.proto",
          "p4/config/v1/p4types.proto")
PLUGIN = shutil.which("grpc_python_plugin")


@pytest.mark.skipif(shutil.which("protoc") is None or PLUGIN is None,
                    reason="protoc or grpc_python_plugin is not installed (the committed "
                           "stubs are used as they are)")
def test_committed_stubs_match_the_protos(tmp_path: Path) -> None:
    googleapis = Path(status_pb2.__file__).parents[2]  # holds google/rpc/status.proto
    subprocess.run(["protoc", "-I", ".", "-I", str(googleapis), f"--python_out={tmp_path}",
                    f"--grpc_out={tmp_path}", f"--plugin=protoc-gen-grpc={PLUGIN}", *PROTOS],
                   cwd=REPO, check=True)
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.py"))
    assert fresh == sorted(p.relative_to(REPO) for p in (REPO / "p4").rglob("*_pb2*.py"))
    for rel in fresh:
        assert (tmp_path / rel).read_text() == (REPO / rel).read_text(), \
            f"{rel} is stale: regenerate it (see p4/README.md)"


def test_stubs_are_the_repositorys_and_run_on_upb() -> None:
    from p4.config.v1 import p4info_pb2
    from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    assert Path(p4runtime_pb2.__file__).resolve() == REPO / "p4/v1/p4runtime_pb2.py"
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
