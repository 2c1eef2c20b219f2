"""The crossover map's grid: slices of (fat-tree k, link speed, PSs, host cost, switch preset,
model), each a small product with two axes a heatmap spreads out, checked before anything
runs so a typo fails in a second rather than after an hour of points.

A map is made of slices, not one product of every axis, because a reader wants a few planes
through the space (k x PSs at 100 Gbit/s, k x host cost) and the whole product at k = 16 would
take days of RAT trees on a 2-core machine.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulation.hardware import HOSTS, SWITCHES
from simulation.profiles import BUILTIN

AXES = ("k", "link_gbps", "ps", "host", "switch", "model")
SCALED = "scaled:"  # one PS per R hosts, at least one


class GridError(ValueError):
    """A grid field with a bad value; the message names the field and what was expected."""


@dataclass(frozen=True)
class Cell:
    """One point of the map: every INA scheme and collective runs on it."""

    slice: str
    k: int
    link_gbps: float
    ps: str  # "4" or "scaled:32"
    host: str  # a host preset or a number of us per message
    switch: str
    model: str
    seed: int

    @property
    def hosts(self) -> int:
        return self.k ** 3 // 4

    @property
    def ps_count(self) -> int:
        """The PS count on this k (``scaled:R``: one per R hosts)."""
        if self.ps.startswith(SCALED):
            return max(1, self.hosts // int(self.ps[len(SCALED):]))
        return int(self.ps)


@dataclass(frozen=True)
class Slice:
    """Axis values (lists) and the two axes its heatmaps spread out."""

    name: str
    axes: dict[str, list[Any]]
    x: str
    y: str

    def cells(self, seeds: list[int]) -> list[Cell]:
        """Every combination whose PS count leaves at least one worker."""
        out = []
        for values in itertools.product(*(self.axes[a] for a in AXES), seeds):
            cell = Cell(self.name, *values)
            if cell.ps_count < cell.hosts:
                out.append(cell)
        return out


BUILTIN_GRIDS: dict[str, list[dict[str, Any]]] = {
    # the test's map: seconds per point
    "quick": [{"name": "k-host", "x": "k", "y": "host", "k": [4, 6], "link_gbps": [100],
               "ps": [2], "host": [0, 47], "switch": ["paper", "tofino1"],
               "model": ["resnet50"]}],
    "small": [
        {"name": "k-ps", "x": "k", "y": "ps", "k": [4, 6, 8], "link_gbps": [100],
         "ps": [1, 2, 4, 8, "scaled:32"], "host": ["gloo"], "switch": ["paper", "tofino1"],
         "model": ["resnet50"]},
        {"name": "k-host", "x": "k", "y": "host", "k": [4, 6, 8], "link_gbps": [100],
         "ps": [4], "host": [0, 10, 47, 200], "switch": ["paper", "tofino1"],
         "model": ["resnet50"]},
    ],
    "full": [
        {"name": "k-ps", "x": "k", "y": "ps", "k": [4, 8, 12, 16], "link_gbps": [100],
         "ps": [1, 4, 16, "scaled:32"], "host": ["gloo"],
         "switch": ["paper", "tofino1"], "model": ["resnet50"]},
        {"name": "k-host", "x": "k", "y": "host", "k": [4, 8, 12, 16], "link_gbps": [100],
         "ps": [4], "host": [0, 9.6, 47, 200], "switch": ["paper", "tofino1"],
         "model": ["resnet50"]},
        {"name": "k-link", "x": "k", "y": "link_gbps", "k": [4, 8, 12], "link_gbps": [10, 100,
                                                                                      400],
         "ps": [4], "host": ["gloo"], "switch": ["tofino1"],
         "model": ["resnet50", "vgg19", "gpt2-small"]},
        {"name": "switch-model", "x": "switch", "y": "model", "k": [8],
         "link_gbps": [100], "ps": [4], "host": ["nccl"],
         "switch": ["paper", "tofino1", "bmv2", "embedded"],
         "model": ["resnet50", "vgg19", "gpt2-small"]},
    ],
}


def _list(where: str, value: Any) -> list[Any]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise GridError(f"{where}: expected at least one value")
    return items


def _axis(where: str, axis: str, values: list[Any]) -> list[Any]:
    """One axis's values, checked and normalised (numbers as numbers, PSs as strings)."""
    out: list[Any] = []
    for v in values:
        bad = GridError(f"{where} {axis}={v!r}: expected {_EXPECT[axis]}")
        if axis == "k":
            if isinstance(v, bool) or not isinstance(v, int) or v < 4 or v % 2:
                raise bad
        elif axis == "link_gbps":
            if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
                raise bad
            v = float(v)
        elif axis == "ps":
            text = str(v)
            number = text[len(SCALED):] if text.startswith(SCALED) else text
            if not number.isdigit() or int(number) < 1:
                raise bad
            v = text
        elif axis == "host":
            if isinstance(v, bool) or (v not in HOSTS and not (
                    isinstance(v, int | float) and v >= 0)):
                raise bad
            v = v if v in HOSTS else str(float(v)).removesuffix(".0")
        elif axis == "switch" and v not in SWITCHES:
            raise bad
        elif axis == "model" and v not in BUILTIN:
            raise bad
        out.append(v)
    return out


_EXPECT = {"k": "an even fat-tree k >= 4", "link_gbps": "Gbit/s > 0",
           "ps": f"a PS count >= 1 or {SCALED}R (one PS per R hosts)",
           "host": f"a host preset ({', '.join(HOSTS)}) or us per message >= 0",
           "switch": f"a switch preset ({', '.join(SWITCHES)})",
           "model": f"a model ({', '.join(BUILTIN)})"}


def parse_slices(data: Any, where: str) -> list[Slice]:
    """Slices from a list of mappings (YAML ``slices:``), every field checked."""
    if not isinstance(data, list) or not data:
        raise GridError(f"{where}: expected a non-empty list of slices")
    slices, names = [], set()
    for i, raw in enumerate(data):
        at = f"{where} slice {i}"
        if not isinstance(raw, dict):
            raise GridError(f"{at}: expected a mapping")
        unknown = set(raw) - {"name", "x", "y", *AXES}
        if unknown:
            raise GridError(f"{at}: unknown field(s) {', '.join(sorted(unknown))}; expected "
                            f"name, x, y, {', '.join(AXES)}")
        name = str(raw.get("name", f"slice{i}"))
        if name in names:
            raise GridError(f"{at}: a second slice named {name!r}")
        names.add(name)
        missing = [a for a in AXES if a not in raw]
        if missing:
            raise GridError(f"{at} ({name}): missing {', '.join(missing)}")
        axes = {a: _axis(f"{at} ({name})", a, _list(f"{at} {a}", raw[a])) for a in AXES}
        x, y = raw.get("x", "k"), raw.get("y", "ps")
        if x not in AXES or y not in AXES or x == y:
            raise GridError(f"{at} ({name}): x={x!r}, y={y!r}: expected two different axes "
                            f"of {', '.join(AXES)}")
        slices.append(Slice(name, axes, x, y))
    return slices


def load_grid(spec: str) -> list[Slice]:
    """``quick | small | full`` or a YAML file with ``slices:`` (examples/crossover.yaml)."""
    if spec in BUILTIN_GRIDS:
        return parse_slices(BUILTIN_GRIDS[spec], f"grid {spec}")
    path = Path(spec)
    if not path.is_file():
        raise GridError(f"--grid {spec!r}: expected {', '.join(BUILTIN_GRIDS)} or a YAML file")
    from control_plane.yamlfile import read_yaml

    data = read_yaml(path, "--grid", GridError)
    if not isinstance(data, dict) or "slices" not in data:
        raise GridError(f"--grid {spec}: expected a mapping with 'slices:'")
    return parse_slices(data["slices"], f"--grid {spec}")
