"""The embedded target as a launchable switch (see emulation/targets/base.py)."""

from __future__ import annotations

import sys

from emulation.targets.base import SwitchSpec, Target


class EmbeddedTarget(Target):
    """``python -m emulation.targets.embedded``: runs anywhere Python runs (raw sockets: root)."""

    name = "embedded"

    def unavailable(self) -> str | None:
        return None

    def command(self, spec: SwitchSpec) -> list[str]:
        """Its log goes to stderr (SwitchProcess captures it), so ``log_file`` is not passed."""
        return [sys.executable, "-m", "emulation.targets.embedded", *self.main_args(spec)]

    def main_args(self, spec: SwitchSpec) -> list[str]:
        """The arguments of its ``main`` (a SwitchFarm forks switches with these)."""
        return ["--no-p4", "--device-id", str(spec.device_id), *spec.interface_args(),
                "--log-level", spec.log_level, *spec.extra, "--", "--grpc-server-addr",
                spec.grpc]

    def describe(self) -> str:
        return f"embedded ({sys.executable} -m emulation.targets.embedded)"
