"""Stratum's BfPipelineConfig packing of a Tofino build, field by field."""

from __future__ import annotations

import pytest
from google.protobuf.internal import decoder

from control_plane.deploy.pipeline import PipelineError, pipeline_for
from control_plane.drivers.tofino.stratum import StratumConfigError, TofinoFiles, pack, unpack


def _fake_build(root):
    (root / "tna" / "pipe").mkdir(parents=True)
    (root / "tna" / "bfrt.json").write_bytes(b'{"tables": []}')
    (root / "tna" / "pipe" / "context.json").write_bytes(b'{"ctx": 1}')
    (root / "tna" / "pipe" / "tofino.bin").write_bytes(bytes(range(256)) * 3)
    (root / "tna" / "inart.p4info.bin").write_bytes(b"")
    return TofinoFiles.in_build(root / "tna")


def _fields(data: bytes) -> list[tuple[int, int, bytes | int]]:
    """(field number, wire type, value) of a serialized message, read by hand."""
    out, pos = [], 0
    while pos < len(data):
        tag, pos = decoder._DecodeVarint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 2:
            size, pos = decoder._DecodeVarint(data, pos)
            out.append((number, wire, data[pos:pos + size]))
            pos += size
        else:
            value, pos = decoder._DecodeVarint(data, pos)
            out.append((number, wire, value))
    return out


def test_wire_layout_is_stratums(tmp_path):
    files = _fake_build(tmp_path)
    data = pack(files, pipe_scope=(0, 2))
    top = _fields(data)
    assert top[0] == (1, 2, b"inart")
    assert top[1] == (2, 2, files.bfrt_json.read_bytes())
    assert [n for n, _, _ in top] == [1, 2, 3]
    profile = _fields(top[2][2])
    assert profile[0] == (1, 2, b"pipe")
    assert profile[1] == (2, 2, files.context_json.read_bytes())
    assert profile[2] == (3, 2, files.binary.read_bytes())
    assert profile[3] == (4, 2, b"\x00\x02")  # packed repeated uint32
    back = unpack(data)
    assert back.profiles[0].binary == files.binary.read_bytes()


def test_missing_file_and_garbage(tmp_path):
    files = _fake_build(tmp_path)
    files.binary.unlink()
    with pytest.raises(StratumConfigError, match="tofino.bin missing"):
        pack(files)
    with pytest.raises(PipelineError, match="tofino.bin missing"):
        pipeline_for("tofino", tmp_path)
    with pytest.raises(StratumConfigError, match="not a BfPipelineConfig"):
        unpack(b"\x08\x01")


def test_pipeline_for_tofino_packs_on_load(tmp_path):
    files = _fake_build(tmp_path)
    pipeline = pipeline_for("tofino", tmp_path)
    assert pipeline.p4info == tmp_path / "tna" / "inart.p4info.bin"
    assert unpack(pipeline.device_config()).bfruntime_info == files.bfrt_json.read_bytes()
