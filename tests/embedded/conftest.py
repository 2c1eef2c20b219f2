"""Fixtures for the embedded target's tests: compiled test programs and in-process devices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from control_plane.drivers.p4runtime import P4Info, build_table_entry, table_update
from emulation.targets.embedded.p4runtime_server import apply_updates, local_device

BUILD = Path(__file__).resolve().parent / "p4" / "build"


def compiled(name: str) -> tuple[bytes, P4Info]:
    """(bmv2 JSON bytes, P4Info) of a committed test program build."""
    json_path = BUILD / f"{name}.json"
    if not json_path.exists():
        pytest.fail(f"{json_path} missing: run tests/embedded/p4/build.py with p4c")
    return json_path.read_bytes(), P4Info.from_file(BUILD / f"{name}.p4info.txt")


class Device:
    """An in-process switch programmed through the P4Runtime service code."""

    def __init__(self, name: str, source: tuple[bytes, P4Info] | None = None) -> None:
        """The committed p4c build ``name``, or ``source``: (bmv2 JSON bytes, P4Info)."""
        self.config, self.p4info = source or compiled(name)
        self.switch, self.servicer = local_device(self.config, self.p4info.proto)
        self.program = self.switch.program

    def entry(self, *args: Any, **kwargs: Any) -> Any:
        """A TableEntry by names (arguments of build_table_entry after the P4Info)."""
        return build_table_entry(self.p4info, *args, **kwargs)

    def insert(self, *args: Any, **kwargs: Any) -> None:
        self.insert_entry(self.entry(*args, **kwargs))

    def insert_entry(self, entry: Any) -> None:
        """Insert a TableEntry as given (tests edit entries the client would refuse to build)."""
        apply_updates(self.servicer, table_update(entry))

    def write(self, *updates: Any) -> None:
        apply_updates(self.servicer, *updates)

    def send(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        return self.switch.process(port, frame)


@pytest.fixture
def device() -> Any:
    return Device
