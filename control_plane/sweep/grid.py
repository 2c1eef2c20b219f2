"""A sweep's grid: the axes (topology x scheme x link speed x model x seed) and the points
they span, from command-line lists or a YAML file, checked before anything runs so a typo
fails in a second rather than after an hour of other points."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from control_plane.yamlfile import read_yaml

AXES = ("topologies", "schemes", "link_gbps", "models", "seeds")


class GridError(ValueError):
    """A grid field with a bad value; the message names the field and what was expected."""


@dataclass(frozen=True)
class Point:
    """One run of the grid: what the runner of its kind gets (with the grid's settings)."""

    kind: str
    topology: str
    scheme: str
    link_gbps: float | None
    model: str | None
    seed: int

    @property
    def key(self) -> str:
        """A stable name, unique in its grid: the results file is keyed by it (resume)."""
        link = "-" if self.link_gbps is None else f"{self.link_gbps:g}G"
        return "/".join((self.kind, self.topology, self.scheme, link, self.model or "-",
                         f"seed{self.seed}"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Grid:
    """The axes of a sweep and settings every point of its kind shares (iterations, scale)."""

    kind: str
    topologies: list[str]
    schemes: list[str]
    link_gbps: list[float | None] = field(default_factory=lambda: [None])
    models: list[str | None] = field(default_factory=lambda: [None])
    seeds: list[int] = field(default_factory=lambda: [0])
    settings: dict[str, Any] = field(default_factory=dict)

    def points(self) -> list[Point]:
        """Every combination, topology-major (the order of the table)."""
        return [Point(self.kind, t, s, g, m, seed) for t, s, g, m, seed in itertools.product(
            self.topologies, self.schemes, self.link_gbps, self.models, self.seeds)]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_list(field_name: str, value: Any) -> list[str]:
    """A YAML list or a comma-separated string -> non-empty stripped strings."""
    items = value if isinstance(value, list) else str(value).split(",")
    names = [str(v).strip() for v in items if str(v).strip()]
    if not names:
        raise GridError(f"{field_name}: expected at least one value, got {value!r}")
    return names


def parse_seeds(value: Any) -> list[int]:
    """``0-2`` -> [0, 1, 2]; ``0,3,5`` or a YAML list of ints (and ranges) as given: the
    --seeds syntax of every command (control_plane.cli.args.parse_seed_spec)."""
    from control_plane.cli.args import parse_seed_spec

    seeds: list[int] = []
    for item in parse_list("seeds", value):
        try:
            seeds += parse_seed_spec(item)
        except ValueError as exc:
            raise GridError(f"seeds: {exc}") from exc
    if len(set(seeds)) != len(seeds):
        raise GridError(f"seeds: {value!r}: a seed is listed twice")
    return seeds


def parse_topologies(value: Any) -> list[str]:
    """Topology specs (a YAML list, or a -t comma list: leafspine:L,S,H keeps its commas),
    each built once here, so a typo fails before any point runs."""
    from control_plane.cli.args import split_topologies
    from control_plane.model.topologies import build_topology
    from control_plane.model.topology import TopologyError

    specs = ([str(v).strip() for v in value] if isinstance(value, list)
             else split_topologies(str(value)))
    if not specs:
        raise GridError(f"topologies: expected at least one value, got {value!r}")
    for spec in specs:
        try:
            build_topology(spec)
        except TopologyError as exc:
            raise GridError(f"topologies: {exc}") from exc
    return specs


def _flows(spec: str) -> int:
    """Worker-PS flows of a topology spec (the exact MILP's size)."""
    from control_plane.model.topologies import build_topology

    topo = build_topology(spec)
    return len(topo.workers) * len(topo.pss)


def parse_link_gbps(value: Any) -> list[float | None]:
    """Link speeds in Gbit/s (> 0); ``topology`` keeps the topology's own capacities."""
    out: list[float | None] = []
    for item in parse_list("link_gbps", value):
        if item == "topology":
            out.append(None)
            continue
        try:
            gbps = float(item)
        except ValueError:
            gbps = float("nan")
        if not gbps > 0 or gbps == float("inf"):
            raise GridError(f"link_gbps: {item!r}: expected Gbit/s > 0 or 'topology'")
        out.append(gbps)
    return out


def parse_models(value: Any, check: str) -> list[str | None]:
    """Model names, each checked by the kind's ``check`` ("module:function" raising
    ValueError for a name it does not know)."""
    from control_plane.sweep.kinds import load_runner

    models = parse_list("models", value)
    for m in models:
        try:
            load_runner(check)(m)
        except ValueError as exc:
            raise GridError(f"models: {exc}") from exc
    return list(models)


def load_grid_file(path: Path) -> dict[str, Any]:
    """A YAML grid: a mapping with kind, the axes and settings (every field optional)."""
    data = read_yaml(path, "--grid", GridError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise GridError(f"--grid {path}: expected a mapping of kind, {', '.join(AXES)}, "
                        f"settings")
    unknown = sorted(set(data) - {"kind", "settings", *AXES})
    if unknown:
        raise GridError(f"--grid {path}: unknown field(s) {', '.join(unknown)}; expected "
                        f"kind, {', '.join(AXES)}, settings")
    if not isinstance(data.get("settings", {}), dict):
        raise GridError(f"--grid {path}: settings: expected a mapping")
    return data


def build_grid(fields: dict[str, Any], kinds: dict[str, Any]) -> Grid:
    """A Grid from raw fields (strings or lists; absent axes take their defaults), checked
    against ``kinds`` (name -> Kind: the kind must be known, schemes among its own)."""
    kind = fields.get("kind")
    if kind not in kinds:
        raise GridError(f"kind: {kind!r}: expected one of {', '.join(kinds)}")
    if fields.get("topologies") is None or fields.get("schemes") is None:
        raise GridError("topologies and schemes: both are needed (-t and -s, or the grid "
                        "file's topologies and schemes)")
    schemes = parse_list("schemes", fields["schemes"])
    allowed = kinds[kind].schemes
    grouped = False
    if allowed is not None:
        from control_plane.cli.args import scheme_groups

        groups = scheme_groups(allowed)
        grouped = any(s in groups for s in schemes)
        schemes = list(dict.fromkeys(n for s in schemes for n in groups.get(s, [s])))
        bad = [s for s in schemes if s not in allowed]
        if bad:
            raise GridError(f"schemes: {', '.join(bad)}: expected for kind {kind} one of "
                            f"{', '.join(allowed)} (or {', '.join(groups)})")
    settings = fields.get("settings") or {}
    unknown = sorted(set(settings) - set(kinds[kind].settings))
    if unknown:
        raise GridError(f"settings: {', '.join(unknown)}: not for kind {kind} (expected "
                        f"{', '.join(kinds[kind].settings) or 'none'})")
    topologies = parse_topologies(fields["topologies"])
    exact = kinds[kind].exact
    if grouped and exact is not None and exact[0] in schemes and len(schemes) > 1 and \
            max(_flows(t) for t in topologies) > exact[1]:
        schemes = [s for s in schemes if s != exact[0]]  # a group keeps the MILP to small ones
    settings = dict(settings)
    if kinds[kind].check is not None:
        from control_plane.sweep.kinds import load_runner

        try:
            settings = load_runner(kinds[kind].check)(settings, topologies)
        except ValueError as exc:
            raise GridError(f"settings: {exc}") from exc
    grid = Grid(kind=kind, topologies=topologies, schemes=schemes, settings=settings)
    if fields.get("link_gbps") not in (None, [None]):  # [None]: a saved grid's default
        if not kinds[kind].link_gbps:
            raise GridError(f"link_gbps: not for kind {kind} (its link speed is a setting)")
        grid.link_gbps = parse_link_gbps(fields["link_gbps"])
    if fields.get("models") not in (None, [None]):
        if kinds[kind].models is None:
            raise GridError(f"models: not for kind {kind} (its gradient size is a setting)")
        grid.models = parse_models(fields["models"], kinds[kind].models)
    if fields.get("seeds") is not None:
        grid.seeds = parse_seeds(fields["seeds"])
    for name in AXES:
        values = getattr(grid, name)
        if len(set(values)) != len(values):
            raise GridError(f"{name}: {values}: a value is listed twice")
    return grid
