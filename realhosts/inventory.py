"""The inventory of a real-hosts run (`inart run --inventory hosts.yaml`): which machine is
which worker or PS, how to reach it, which switch serves where, and the topology.

Parsed and validated here, before anything is contacted: every error names the file, the
entry and the field, and says what was expected.  Format (docs/tofino.md, "Real hosts";
examples/inventory.yaml)::

    schema: inart.inventory/1
    topology: fig1                 # a name inart knows, a topology file (relative to this
                                   # file), or {spec: fattree:4, ps: 2, seed: 0}
    ssh: {user: root, key: ~/.ssh/id_ed25519, port: 22, options: [...]}   # defaults
    python: /opt/inart/.venv/bin/python   # interpreter on the hosts (default: python3 over
                                          # SSH, this one in a namespace)
    repo: /opt/inart                      # default checkout of inart on the hosts
    hosts:
      w1: {role: worker, interface: enp1s0, address: 192.0.2.11}           # over SSH
      s1: {role: ps, interface: eth0, launcher: netns, netns: inart-s1}    # a namespace here
    switches:
      v1: {driver: p4runtime, target: bmv2, address: 192.0.2.100:9559, device_id: 1}
      v2: {driver: bfrt, target: tofino, address: 192.0.2.101:50052, ports: ports-v2.yaml}
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from control_plane.model.topologies import build_topology, command_seed
from control_plane.model.topology import Topology, TopologyError
from control_plane.repo import REPO
from control_plane.yamlfile import Fields, read_yaml
from host_stack.remote.hosts import HostSpec, SshSpec, ssh_defaults

SCHEMA = "inart.inventory/1"
LAUNCHERS = ("ssh", "netns")
ROLES = ("worker", "ps")
DRIVERS = {"p4runtime": ("embedded", "bmv2", "tofino"), "bfrt": ("tofino",)}
TOPOLOGY_KEYS = ("spec", "ps", "workers", "preset", "seed")


class InventoryError(ValueError):
    """A bad inventory; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class SwitchSpec:
    """One switch: its driver, target and control address (P4Runtime or BF Runtime)."""

    name: str
    driver: str
    target: str
    address: str
    device_id: int | None = None
    ports: Path | None = None  # tofino: its ports file


@dataclass
class Inventory:
    """A validated inventory."""

    path: Path
    topology: Topology
    hosts: dict[str, HostSpec]
    switches: dict[str, SwitchSpec]
    topology_spec: str = ""

    @property
    def driver(self) -> str:
        return next(iter(self.switches.values())).driver

    @property
    def target(self) -> str:
        return next(iter(self.switches.values())).target


class _Fields(Fields):
    what = "inventory"
    error_type = InventoryError


def _address(fields: _Fields, name: str) -> str:
    value = fields.required(name)
    host, colon, port = value.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise fields.error(name, f"{value!r}: expected HOST:PORT, e.g. 192.0.2.100:9559")
    return value


def _topology(path: Path, doc: object) -> tuple[Topology, str]:
    if isinstance(doc, str):
        spec, opts = doc, {}
    else:
        f = _Fields(path, "topology", doc, TOPOLOGY_KEYS)
        spec = f.required("spec")
        opts = {k: f.integer(k, None, 0 if k == "seed" else 1, 10**6)
                for k in ("ps", "workers", "seed")}
        opts["preset"] = f.text("preset")
    local = (path.parent / spec)
    if local.is_file():
        spec = str(local)
    try:
        seed = command_seed(opts.get("seed") or 0)
        return build_topology(spec, ps=opts.get("ps"), workers=opts.get("workers"),
                              preset=opts.get("preset"), seed=seed), spec
    except (TopologyError, ValueError, OSError) as exc:
        raise InventoryError(f"inventory {path}: topology: {exc}") from None


def _host(path: Path, name: str, doc: object, top: dict[str, Any]) -> HostSpec:
    f = _Fields(path, f"hosts.{name}", doc, ("role", "interface", "launcher", "address",
                                             "user", "port", "key", "netns", "python", "repo"))
    launcher = f.text("launcher", top["launcher"], LAUNCHERS)
    assert launcher is not None
    ssh = netns = None
    if launcher == "ssh":
        d = top["ssh"]
        ssh = SshSpec(f.required("address"), f.text("user", d["user"]) or d["user"],
                      f.integer("port", d["port"], 1, 65535) or 22, f.text("key", d["key"]),
                      d["options"])
        for other in ("netns",):
            if other in f.doc:
                raise f.error(other, "only with launcher: netns")
    else:
        netns = f.required("netns")
        for other in ("address", "user", "port", "key"):
            if other in f.doc:
                raise f.error(other, "only with launcher: ssh")
    interface = f.required("interface")
    if len(interface) > 15 or "/" in interface:
        raise f.error("interface", f"{interface!r}: expected a Linux interface name "
                                   f"(at most 15 characters)")
    # a namespace here runs this interpreter; another machine its python3 unless told
    python = f.text("python", top["python"]) or (sys.executable if netns else "python3")
    return HostSpec(name, f.required("role", ROLES), interface, launcher, python,
                    f.text("repo", top["repo"]) or top["repo"], ssh, netns)


def _switch(path: Path, name: str, doc: object) -> SwitchSpec:
    f = _Fields(path, f"switches.{name}", doc, ("driver", "target", "address", "device_id",
                                                "ports"))
    driver = f.text("driver", "p4runtime", tuple(DRIVERS))
    assert driver is not None
    target = f.text("target", DRIVERS[driver][0], DRIVERS[driver])
    assert target is not None
    ports = f.text("ports")
    if target == "tofino" and ports is None:
        raise f.error("ports", "missing: a tofino switch needs its ports file "
                               "(docs/tofino.md, 'The ports file')")
    if target != "tofino" and ports is not None:
        raise f.error("ports", "only for target tofino")
    return SwitchSpec(name, driver, target, _address(f, "address"),
                      f.integer("device_id", None, 0, 2**63 - 1),
                      (path.parent / ports) if ports else None)


def parse(path: Path, doc: object) -> Inventory:
    """Validate a loaded inventory document against the topology it names."""
    top = _Fields(path, "", doc, ("schema", "topology", "launcher", "ssh", "python", "repo",
                                  "hosts", "switches"))
    if top.doc.get("schema") != SCHEMA:
        raise top.error("schema", f"{top.doc.get('schema')!r}: expected {SCHEMA}")
    if "topology" not in top.doc:
        raise top.error("topology", "missing (required)")
    topo, spec = _topology(path, top.doc["topology"])
    defaults = {"launcher": top.text("launcher", "ssh", LAUNCHERS),
                "ssh": ssh_defaults(_Fields, path, top.doc.get("ssh")),
                "python": top.text("python"), "repo": top.text("repo", str(REPO))}
    hosts_doc, switches_doc = top.doc.get("hosts"), top.doc.get("switches")
    for key, value in (("hosts", hosts_doc), ("switches", switches_doc)):
        if not isinstance(value, dict) or not value:
            raise top.error(key, "expected a non-empty mapping of node id -> fields")
    hosts = {str(n): _host(path, str(n), d, defaults) for n, d in hosts_doc.items()}
    switches = {str(n): _switch(path, str(n), d) for n, d in switches_doc.items()}
    for name, h in hosts.items():
        node = topo.nodes.get(name)
        if node is None or node.kind not in ROLES:
            raise top.error(f"hosts.{name}", f"the topology {spec} has no worker or PS "
                                             f"'{name}'")
        if node.kind != h.role:
            raise top.error(f"hosts.{name}.role", f"{h.role!r}: the topology {spec} has "
                                                  f"'{name}' as a {node.kind}")
    for name in switches:
        if name not in topo.switches:
            raise top.error(f"switches.{name}", f"the topology {spec} has no switch '{name}' "
                                                f"(switches: {', '.join(topo.switches)})")
    missing = [n for n in topo.workers + topo.pss if n not in hosts]
    if missing:
        raise top.error("hosts", f"no entry for {', '.join(missing)} (every worker and PS "
                                 f"of the topology needs one)")
    missing = [n for n in topo.switches if n not in switches]
    if missing:
        raise top.error("switches", f"no entry for {', '.join(missing)}")
    kinds = {(s.driver, s.target) for s in switches.values()}
    if len(kinds) > 1:
        raise top.error("switches", f"mixed drivers/targets {sorted(kinds)}: one install "
                                    f"transaction takes one pipeline; expected the same "
                                    f"driver and target on every switch")
    seen: dict[tuple, str] = {}
    for h in hosts.values():
        where = (h.ssh.address, h.interface) if h.ssh else (h.netns, h.interface)
        if where in seen:
            raise top.error(f"hosts.{h.name}.interface", f"{h.interface!r} on the same "
                                                         f"machine as host '{seen[where]}'")
        seen[where] = h.name
    return Inventory(path, topo, hosts, switches, spec)


def load(path: str | Path) -> Inventory:
    """Read and validate an inventory file (YAML or JSON)."""
    path = Path(path)
    return parse(path, read_yaml(path, "inventory", InventoryError))

