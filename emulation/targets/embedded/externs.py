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


@dataclass
class ValueSet:
    """A parser value set: the transition keys (each field padded to whole bytes, as the
    parser builds its keys) the control plane put in it, replaced as a whole by P4Runtime."""

    name: str
    size: int
    values: set[int] = field(default_factory=set)  # read by the generated parser
    members: list[tuple[tuple[int, int], ...]] = field(default_factory=list)  # (value, mask)s
    widths: list[int] = field(default_factory=list)  # key field widths, set by the parser

    def replace(self, members: list[tuple[tuple[int, int], ...]]) -> None:
        """Install the members (per key field: value, mask) in place."""
        values = set()
        for member in members:
            key = 0
            for (value, _), width in zip(member, self.widths, strict=True):
                key = (key << ((width + 7) // 8 * 8)) | value
            values.add(key)
        self.values.clear()
        self.values.update(values)
        self.members[:] = members
