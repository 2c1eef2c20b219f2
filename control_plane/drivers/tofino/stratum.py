"""The P4Runtime ``p4_device_config`` of a Tofino pipeline for Stratum (stratum_bfrt).

Stratum's Tofino targets take a ``stratum.hal.barefoot.BfPipelineConfig`` protobuf:
``p4_name`` (1), ``bfruntime_info`` (2, bfrt.json) and ``profiles`` (3), each profile with
``profile_name`` (1), ``context`` (2, context.json), ``binary`` (3, tofino.bin) and
``pipe_scope`` (4, hardware pipes; empty = all).  The layout is Stratum's public interface
(stratum/hal/lib/barefoot/bf.proto); the message is declared here from those field numbers
so no Stratum code or generated stubs are needed, and the same P4Runtime client that drives
bmv2 then drives Stratum.  The older PI packing (length-prefixed name, binary, context) is not
produced: stratum_bfrt does not accept it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "inart.stratum_bf"
P4_NAME = "inart"
PROFILE = "pipe"  # bf-p4c's output directory for the one pipeline of a TNA program

_F = descriptor_pb2.FieldDescriptorProto


class StratumConfigError(ValueError):
    """A build cannot be packed (a file is missing) or bytes are not a BfPipelineConfig."""


def _message_class():
    """BfPipelineConfig as a message class, from a descriptor built in code."""
    fd = descriptor_pb2.FileDescriptorProto(name="inart_stratum_bf.proto", package=PACKAGE,
                                            syntax="proto3")
    msg = fd.message_type.add(name="BfPipelineConfig")
    prof = msg.nested_type.add(name="Profile")
    for name, number, ftype, label in (
            ("profile_name", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL),
            ("context", 2, _F.TYPE_BYTES, _F.LABEL_OPTIONAL),
            ("binary", 3, _F.TYPE_BYTES, _F.LABEL_OPTIONAL),
            ("pipe_scope", 4, _F.TYPE_UINT32, _F.LABEL_REPEATED)):
        prof.field.add(name=name, number=number, type=ftype, label=label)
    msg.field.add(name="p4_name", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    msg.field.add(name="bfruntime_info", number=2, type=_F.TYPE_BYTES, label=_F.LABEL_OPTIONAL)
    msg.field.add(name="profiles", number=3, type=_F.TYPE_MESSAGE, label=_F.LABEL_REPEATED,
                  type_name=f".{PACKAGE}.BfPipelineConfig.Profile")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    desc = pool.FindMessageTypeByName(f"{PACKAGE}.BfPipelineConfig")
    return message_factory.GetMessageClass(desc)


BfPipelineConfig = _message_class()


@dataclass(frozen=True)
class TofinoFiles:
    """The three compiler outputs a Tofino device needs."""

    bfrt_json: Path
    context_json: Path
    binary: Path

    @classmethod
    def in_build(cls, build_dir: Path) -> TofinoFiles:
        return cls(build_dir / "bfrt.json", build_dir / PROFILE / "context.json",
                   build_dir / PROFILE / "tofino.bin")

    def check(self) -> None:
        for path in (self.bfrt_json, self.context_json, self.binary):
            if not path.is_file():
                raise StratumConfigError(f"{path} missing: the Tofino build is incomplete "
                                         f"(rebuild with `make p4` where bf-p4c is installed)")


def pack(files: TofinoFiles, p4_name: str = P4_NAME,
         pipe_scope: tuple[int, ...] = ()) -> bytes:
    """The serialized BfPipelineConfig for ``files`` (one profile, ``pipe_scope`` pipes)."""
    files.check()
    cfg = BfPipelineConfig(p4_name=p4_name, bfruntime_info=files.bfrt_json.read_bytes())
    cfg.profiles.add(profile_name=PROFILE, context=files.context_json.read_bytes(),
                     binary=files.binary.read_bytes(), pipe_scope=list(pipe_scope))
    return cfg.SerializeToString(deterministic=True)


def unpack(data: bytes) -> BfPipelineConfig:
    """Parse a packed config (for checks and for `inart` tools that inspect one)."""
    cfg = BfPipelineConfig()
    try:
        cfg.ParseFromString(data)
    except Exception as exc:  # DecodeError; protobuf raises several kinds
        raise StratumConfigError(f"not a BfPipelineConfig: {exc}") from None
    if not cfg.p4_name or not cfg.profiles:
        raise StratumConfigError("not a BfPipelineConfig: p4_name or profiles missing")
    return cfg
