"""Stateful objects of a pipeline: register arrays and counter arrays.

They are plain lists so generated code indexes them directly; the P4Runtime server reads and
writes the same lists (register reads are something bmv2's P4Runtime lacks).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RegisterArray:
    """``size`` cells of ``bitwidth`` bits, all starting at 0."""

    name: str
    size: int
    bitwidth: int
    values: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.values = [0] * self.size

    @property
    def mask(self) -> int:
        return (1 << self.bitwidth) - 1


@dataclass
class CounterArray:
    """Packets and bytes per index; direct counters are kept on table entries instead."""

    name: str
    size: int
    is_direct: bool = False
    binding: str | None = None
    packets: list[int] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.packets = [0] * self.size
        self.bytes = [0] * self.size

    def reset(self) -> None:
        self.packets[:] = [0] * self.size
        self.bytes[:] = [0] * self.size
