"""bmv2's ``simple_switch_grpc`` as a target: found in one configured place, launched, described.

Where it is: ``$INART_BMV2`` (the binary's path), else ``simple_switch_grpc`` on PATH, else
the prefix the README's build notes use (/opt/p4/bin).  Which build it is: bmv2 installs
``include/bm/config.h`` beside its binary's prefix, whose BM_LOG_DEBUG_ON / BM_ELOG_ON macros
tell a default build (logging macros and event logger compiled in) from the performance
configuration (both off) that benchmarks must compare against.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from emulation.targets.base import SwitchSpec, Target

ENV_VAR = "INART_BMV2"
BINARY = "simple_switch_grpc"
DOCUMENTED_PREFIX = Path("/opt/p4")


def find_bmv2() -> Path | None:
    """The simple_switch_grpc to use, or None when there is none."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured) if os.access(configured, os.X_OK) else None
    on_path = shutil.which(BINARY)
    if on_path:
        return Path(on_path)
    default = DOCUMENTED_PREFIX / "bin" / BINARY
    return default if os.access(default, os.X_OK) else None


def build_kind(binary: Path) -> str:
    """'performance' or 'default' from the installed bm/config.h, 'unknown' without it."""
    config = binary.resolve().parent.parent / "include" / "bm" / "config.h"
    try:
        text = config.read_text()
    except OSError:
        return "unknown"
    logging_on = any(f"#define {m}" in text for m in ("BM_LOG_DEBUG_ON", "BM_LOG_TRACE_ON",
                                                      "BM_ELOG_ON"))
    return "default (logging macros/event logger on)" if logging_on else \
        "performance (logging macros and event logger off)"


@functools.cache
def _has_thrift(binary: Path) -> bool:
    """Whether this build takes --thrift-port (one built without Thrift exits on it)."""
    out = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30,
                         env=_env(binary))
    return "--thrift-port" in out.stdout + out.stderr


def _env(binary: Path) -> dict[str, str]:
    from control_plane.repo import child_env

    lib = binary.resolve().parent.parent / "lib"
    if not lib.is_dir():
        return child_env()
    return child_env(LD_LIBRARY_PATH=os.pathsep.join(
        p for p in (str(lib), os.environ.get("LD_LIBRARY_PATH")) if p))


class Bmv2Target(Target):
    """``simple_switch_grpc`` built with PI (see README 'P4 toolchain')."""

    name = "bmv2"

    def binary(self) -> Path:
        found = find_bmv2()
        if found is None:
            raise FileNotFoundError(self.unavailable())
        return found

    def unavailable(self) -> str | None:
        if find_bmv2() is not None:
            return None
        if os.environ.get(ENV_VAR):
            return f"${ENV_VAR}={os.environ[ENV_VAR]} is not an executable file"
        return (f"{BINARY} not found (set ${ENV_VAR}, put it on PATH, or build it into "
                f"{DOCUMENTED_PREFIX}; see README 'P4 toolchain')")

    def command(self, spec: SwitchSpec) -> list[str]:
        binary = self.binary()
        # with Thrift compiled in, each switch of a network needs its own port
        thrift = ["--thrift-port", str(9090 + spec.device_id)] if _has_thrift(binary) else []
        log = ["--log-file", str(spec.log_file)] if spec.log_file else []
        return [str(binary), "--no-p4", "--device-id", str(spec.device_id),
                *spec.interface_args(), *thrift, *log, "--log-level", spec.log_level,
                *spec.extra, "--", "--grpc-server-addr", spec.grpc]

    def env(self) -> dict[str, str]:
        return _env(self.binary())

    def describe(self) -> str:
        binary = find_bmv2()
        return f"bmv2 {binary} [{build_kind(binary)} build]" if binary else "bmv2 (absent)"
