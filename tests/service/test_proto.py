"""The committed gRPC stubs are what protoc makes of the committed .proto, and they run on the
project's protobuf runtime (in the range pyproject.toml declares; upb in the development venv;
tests/test_wheel_beside_shell.py runs them on protobuf 3.20)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import google.protobuf
import grpc
import pytest
from google.protobuf.internal import api_implementation
from packaging.specifiers import SpecifierSet

from control_plane.repo import REPO
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.proto import inart_controller_pb2_grpc as pb_grpc

PROTO = "control_plane/service/proto/inart_controller.proto"
GENERATED = ("inart_controller_pb2.py", "inart_controller_pb2_grpc.py")
PLUGIN = shutil.which("grpc_python_plugin")


@pytest.mark.skipif(shutil.which("protoc") is None or PLUGIN is None,
                    reason="protoc or grpc_python_plugin is not installed (the committed "
                           "stubs are used as they are)")
def test_committed_stubs_match_the_proto(tmp_path: Path) -> None:
    subprocess.run(["protoc", "-I", ".", f"--python_out={tmp_path}", f"--grpc_out={tmp_path}",
                    f"--plugin=protoc-gen-grpc={PLUGIN}", PROTO], cwd=REPO, check=True)
    for name in GENERATED:
        fresh = (tmp_path / Path(PROTO).parent / name).read_text()
        committed = (REPO / Path(PROTO).parent / name).read_text()
        assert fresh == committed, f"{name} is stale: regenerate it (see {PROTO})"


def test_stubs_run_on_the_declared_protobuf() -> None:
    declared = re.search(r'"protobuf([^"]+)"', (REPO / "pyproject.toml").read_text())
    assert declared and google.protobuf.__version__ in SpecifierSet(declared.group(1))
    assert api_implementation.Type() == "upb"
    msg = pb.PlanVersion(job_id=3, ranks={"w1": 0}, addresses={"s1": "10.6.0.2"})
    assert pb.PlanVersion.FromString(msg.SerializeToString()) == msg
    assert not pb.SwitchAddress(name="v1").HasField("device_id")  # proto3 optional
    assert pb.SwitchAddress(name="v1", device_id=0).HasField("device_id")
    methods = {m.name for m in pb.DESCRIPTOR.services_by_name["Controller"].methods}
    assert {"SubmitJob", "ReportEvent", "Watch"} <= methods
    with grpc.insecure_channel("127.0.0.1:1") as channel:
        stub = pb_grpc.ControllerStub(channel)
        assert all(callable(getattr(stub, m)) for m in methods)
