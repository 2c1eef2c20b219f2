"""The pipeline config a target needs, built from the committed P4 build (p4src/build/).

bmv2 and the embedded target run the same p4c output (bmv2 JSON + P4Info); a Tofino behind
Stratum takes the TNA build (p4src/build/tna/: P4Info, and bfrt.json + context.json +
tofino.bin packed as Stratum's BfPipelineConfig).  Both `inart install` and the emulation
push what this module returns, so a target is programmed the same way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from control_plane.repo import P4_BUILD

# target name -> how its device config is made
TARGET_CONFIG = {"embedded": "bmv2-json", "bmv2": "bmv2-json", "tofino": "stratum-bf"}
TNA_BUILD = P4_BUILD / "tna"


class PipelineError(RuntimeError):
    """A pipeline config could not be built; the message names the missing file or target."""


@dataclass(frozen=True)
class Pipeline:
    """P4Info plus the target's device config, as files of one build.

    ``config`` is the device config file itself (bmv2 JSON), or, for ``packing`` =
    'stratum-bf', the Tofino build directory whose outputs are packed on load.
    """

    p4info: Path = P4_BUILD / "inart.p4info.txtpb"
    config: Path = P4_BUILD / "inart.json"
    packing: str = "bmv2-json"

    def check(self) -> None:
        """Refuse a build with a missing file before any switch is touched."""
        for path, what in ((self.p4info, "P4Info"), (self.config, "device config")):
            if not path.exists():
                raise PipelineError(f"{what} {path} missing: build the P4 program with `make p4` "
                                    f"(needs p4c) or check out p4src/build/")
        if self.packing == "stratum-bf":
            from control_plane.drivers.tofino.stratum import StratumConfigError, TofinoFiles

            try:
                TofinoFiles.in_build(self.config).check()
            except StratumConfigError as exc:
                raise PipelineError(str(exc)) from None

    def device_config(self) -> bytes:
        """The bytes that go into P4Runtime's ``p4_device_config``."""
        if self.packing == "stratum-bf":
            from control_plane.drivers.tofino.stratum import TofinoFiles, pack

            return pack(TofinoFiles.in_build(self.config))
        return self.config.read_bytes()


def pipeline_for(target: str, build_dir: Path = P4_BUILD) -> Pipeline:
    """The pipeline of our program for ``target`` (from ``build_dir``)."""
    kind = TARGET_CONFIG.get(target)
    if kind is None:
        raise PipelineError(f"target '{target}': expected one of {', '.join(TARGET_CONFIG)}")
    if kind == "stratum-bf":
        tna = build_dir / "tna"
        pipeline = Pipeline(tna / "inart.p4info.bin", tna, kind)
    else:
        pipeline = Pipeline(build_dir / "inart.p4info.txtpb", build_dir / "inart.json")
    pipeline.check()
    return pipeline
