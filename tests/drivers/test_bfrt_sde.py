"""Finding the SDE's bfrt_grpc: clear reasons when it is missing, the package when present."""

from __future__ import annotations

import pytest

from control_plane.drivers.bfrt.sde import SdeError, load_stubs, sde_missing


def test_no_sde_says_so():
    assert "$SDE_INSTALL is not set" in sde_missing({})
    with pytest.raises(SdeError, match=r"source the SDE's set_sde.sh"):
        load_stubs({})


def test_sde_without_bfrt_grpc(tmp_path):
    assert "has no lib/python3*/site-packages/tofino" in sde_missing(
        {"SDE_INSTALL": str(tmp_path)})
    (tmp_path / "lib/python3.10/site-packages/tofino").mkdir(parents=True)
    assert "no bfrt_grpc/bfruntime_pb2.py" in sde_missing({"SDE_INSTALL": str(tmp_path)})


def test_the_sde_package_is_imported(tmp_path):
    pkg = tmp_path / "lib/python3.10/site-packages/tofino/bfrt_grpc"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    # stand-ins that re-export the test subset (a real SDE has protoc's output here)
    (pkg / "bfruntime_pb2.py").write_text("from tests.drivers.bfrt_fake import PB2\n"
                                          "globals().update(vars(PB2))\n")
    (pkg / "bfruntime_pb2_grpc.py").write_text("from tests.drivers.bfrt_fake import GRPC\n"
                                               "BfRuntimeStub = GRPC.BfRuntimeStub\n")
    stubs = load_stubs({"SDE_INSTALL": str(tmp_path)})
    assert stubs.origin == pkg.parent
    assert stubs.pb2.WriteRequest().DESCRIPTOR.full_name == "bfrt_proto.WriteRequest"
    assert hasattr(stubs.grpc, "BfRuntimeStub")
