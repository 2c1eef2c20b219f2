"""The ports file of one Tofino switch: which front-panel port is the plan's port k, and how
to bring it up.

The deploy layer numbers a switch's ports 1, 2, ... (its neighbours in natural id order);
a Tofino forwards on *dev ports* (e.g. 128 for front-panel port 1/0 of a Wedge100BF-32X), and
bf_switchd needs speed, FEC and auto-negotiation before a port comes up.  Format (YAML):

    schema: inart.ports/1
    ports:
      - port: 1            # the plan's port number on this switch
        front: 1/0         # front-panel port (bf_switchd's $PORT_STR_INFO name), or ...
        dev_port: 128      # ... the dev port itself (then `front` may be left out)
        speed: 100G        # 1G 10G 25G 40G 50G 100G 200G 400G
        fec: rs            # none | fc | rs          (default: none)
        autoneg: default   # default | on | off      (default: default)
        iface: veth1       # PTF only: the test host's interface wired to this port

Every error names the file, the entry and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from control_plane.yamlfile import read_yaml

SCHEMA = "inart.ports/1"
# ports file value -> bf_switchd $PORT table value
SPEEDS = {s: f"BF_SPEED_{s}" for s in ("1G", "10G", "25G", "40G", "50G", "100G", "200G",
                                       "400G")}
FECS = {"none": "BF_FEC_TYP_NONE", "fc": "BF_FEC_TYP_FIRECODE",
        "rs": "BF_FEC_TYP_REED_SOLOMON"}
AUTONEG = {"default": "PM_AN_DEFAULT", "on": "PM_AN_FORCE_ENABLE", "off": "PM_AN_FORCE_DISABLE"}
FRONT = re.compile(r"^\d+/\d+$")
MAX_DEV_PORT = 511  # Tofino PortId_t is 9 bits
KEYS = {"port", "front", "dev_port", "speed", "fec", "autoneg", "iface"}


class PortsError(ValueError):
    """A ports file that cannot be used; the message names the file, entry and field."""


@dataclass(frozen=True)
class PortSpec:
    """One front-panel port as the ports file describes it."""

    port: int  # the plan's port number
    front: str | None
    dev_port: int | None
    speed: str
    fec: str
    autoneg: str
    iface: str | None = None

    @property
    def name(self) -> str:
        return self.front or f"dev port {self.dev_port}"


@dataclass(frozen=True)
class PortsFile:
    """All ports of one switch, by the plan's port number."""

    path: str
    ports: dict[int, PortSpec]

    def dev_ports(self, resolved: dict[str, int] | None = None) -> dict[int, int]:
        """plan port -> dev port; ``resolved`` maps front-panel names to dev ports (what the
        switch answered), needed for entries that give `front` without `dev_port`."""
        out = {}
        for k, spec in self.ports.items():
            if spec.dev_port is not None:
                out[k] = spec.dev_port
            elif resolved is not None and spec.front in resolved:
                out[k] = resolved[spec.front]
            else:
                raise PortsError(f"{self.path}: port {k} ({spec.front}): its dev port is not "
                                 f"known; give dev_port or let the driver look it up")
        return out


def _choice(where: str, field: str, value: object, table: dict[str, str], default: str | None
            ) -> str:
    if value is None:
        if default is None:
            raise PortsError(f"{where}: '{field}' missing; expected one of {', '.join(table)}")
        return default
    text = str(value)
    if text not in table:
        raise PortsError(f"{where}: {field} {text!r}: expected one of {', '.join(table)}")
    return text


def _int(where: str, field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise PortsError(f"{where}: {field} {value!r}: expected an integer {low}..{high}")
    return value


def _entry(where: str, raw: object) -> PortSpec:
    if not isinstance(raw, dict):
        raise PortsError(f"{where}: expected a mapping with port, front or dev_port, speed")
    unknown = set(raw) - KEYS
    if unknown:
        raise PortsError(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}; "
                         f"expected {', '.join(sorted(KEYS))}")
    if "port" not in raw:
        raise PortsError(f"{where}: 'port' missing (the plan's port number on this switch)")
    port = _int(where, "port", raw["port"], 1, MAX_DEV_PORT)
    front = raw.get("front")
    if front is not None and not FRONT.match(str(front)):
        raise PortsError(f"{where}: front {front!r}: expected CONNECTOR/CHANNEL, e.g. 1/0")
    dev = raw.get("dev_port")
    if dev is not None:
        dev = _int(where, "dev_port", dev, 0, MAX_DEV_PORT)
    if front is None and dev is None:
        raise PortsError(f"{where}: give 'front' (e.g. 1/0) or 'dev_port'")
    iface = raw.get("iface")
    if iface is not None and (not isinstance(iface, str) or not iface):
        raise PortsError(f"{where}: iface {iface!r}: expected an interface name")
    return PortSpec(port, None if front is None else str(front), dev,
                    _choice(where, "speed", raw.get("speed"), SPEEDS, None),
                    _choice(where, "fec", raw.get("fec"), FECS, "none"),
                    _choice(where, "autoneg", raw.get("autoneg"), AUTONEG, "default"), iface)


def parse_ports(doc: object, path: str = "<ports>") -> PortsFile:
    """Validate a loaded ports document."""
    if not isinstance(doc, dict):
        raise PortsError(f"{path}: expected a mapping with 'schema: {SCHEMA}' and 'ports'")
    if doc.get("schema") != SCHEMA:
        raise PortsError(f"{path}: schema {doc.get('schema')!r}: expected {SCHEMA!r}")
    raw = doc.get("ports")
    if not isinstance(raw, list) or not raw:
        raise PortsError(f"{path}: 'ports' must be a non-empty list")
    ports: dict[int, PortSpec] = {}
    seen: dict[object, int] = {}
    for i, item in enumerate(raw):
        spec = _entry(f"{path}: ports[{i}]", item)
        if spec.port in ports:
            raise PortsError(f"{path}: ports[{i}]: port {spec.port} is given twice")
        for ident in (("front", spec.front), ("dev_port", spec.dev_port)):
            if ident[1] is not None:
                if ident in seen:
                    raise PortsError(f"{path}: ports[{i}]: {ident[0]} {ident[1]} is already "
                                     f"plan port {seen[ident]}")
                seen[ident] = spec.port
        ports[spec.port] = spec
    return PortsFile(path, ports)


def load_ports(path: str | Path) -> PortsFile:
    """Read and validate a ports file."""
    return parse_ports(read_yaml(path, "ports file", PortsError), str(path))
