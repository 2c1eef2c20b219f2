"""The servers file of `inart emulate --cluster servers.yaml`: which servers, how to reach them,
which tunnel joins them, and where nodes must run.

Parsed and validated before any server is contacted; every error names the file, the entry and
the field.  Format (docs/emulation.md, "Running on several servers")::

    schema: inart.cluster/1
    ssh: {user: root, key: ~/.ssh/id_ed25519, port: 22, options: [...]}   # defaults
    tunnel: vxlan              # links between servers: vxlan (default) or ssh
    servers:
      a: {address: 192.0.2.10}                       # SSH and P4Runtime address
      b: {address: 192.0.2.11, tunnel_address: 198.51.100.11, user: inart}
    links: {v1-v2: ssh}        # per-link tunnel (either order of the two nodes)
    placement: {v2: b, w1: a}  # pins a switch (its hosts follow) or a host

The servers run this machine's checkout and interpreter at the same paths (checks.py).
"""

from __future__ import annotations

import argparse
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from control_plane.model.topology import Topology
from control_plane.yamlfile import Fields, read_yaml
from host_stack.remote.hosts import SshSpec, ssh_defaults

SCHEMA = "inart.cluster/1"
TUNNELS = ("vxlan", "ssh")
REFUSED_TUNNELS = {"gre": "GRE (gretap) is missing from kernels built without "
                          "CONFIG_NET_IPGRE, this machine's among them; use vxlan"}


class ClusterSpecError(ValueError):
    """A bad servers file; the message names the file, the entry and the field."""


class _ServerFields(Fields):
    what = "servers file"
    error_type = ClusterSpecError


@dataclass(frozen=True)
class Server:
    """One server: its name in the file, how SSH reaches it, and the address its tunnels use."""

    name: str
    ssh: SshSpec
    tunnel_address: str

    @property
    def address(self) -> str:
        """Where SSH and the controller's P4Runtime connections reach it."""
        return self.ssh.address


@dataclass(frozen=True)
class ClusterSpec:
    """A validated servers file."""

    path: Path
    servers: dict[str, Server]
    tunnel: str = "vxlan"
    links: dict[frozenset[str], str] = field(default_factory=dict)
    placement: dict[str, str] = field(default_factory=dict)

    def tunnel_of(self, a: str, b: str) -> str:
        """The tunnel kind of link a-b when its ends run on different servers."""
        return self.links.get(frozenset((a, b)), self.tunnel)

    def check_topology(self, topo: Topology) -> None:
        """Placement and link entries must name nodes and links of ``topo``."""
        nodes = set(topo.nodes)
        for node in self.placement:
            if node not in nodes:
                raise ClusterSpecError(f"servers file {self.path}: placement.{node}: the "
                                       f"topology {topo.name} has no node '{node}'")
        every = {frozenset(ab) for ab in topo.links}
        for link in self.links:
            if link not in every:
                name = "-".join(sorted(link))
                raise ClusterSpecError(f"servers file {self.path}: links.{name}: not a link "
                                       f"of {topo.name} (expected two nodes joined by a link)")


def _ip(f: _ServerFields, name: str, value: str) -> str:
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise f.error(name, f"{value!r}: expected an IPv4 address") from None


def _tunnel(f: _ServerFields, name: str, value: object) -> str:
    if isinstance(value, str) and value in REFUSED_TUNNELS:
        raise f.error(name, f"{value!r}: {REFUSED_TUNNELS[value]}")
    if value not in TUNNELS:
        raise f.error(name, f"{value!r}: expected one of {', '.join(TUNNELS)}")
    return str(value)


def _server(path: Path, name: str, doc: object, ssh: dict) -> Server:
    f = _ServerFields(path, f"servers.{name}", doc, ("address", "tunnel_address", "user",
                                                     "port", "key"))
    address = _ip(f, "address", f.required("address"))
    tunnel = f.text("tunnel_address")
    spec = SshSpec(address, f.text("user", ssh["user"]) or ssh["user"],
                   f.integer("port", ssh["port"], 1, 65535) or 22, f.text("key", ssh["key"]),
                   ssh["options"])
    return Server(name, spec, _ip(f, "tunnel_address", tunnel) if tunnel else address)


def parse(path: Path, doc: object) -> ClusterSpec:
    """Validate a loaded servers document."""
    top = _ServerFields(path, "", doc, ("schema", "ssh", "tunnel", "servers", "links",
                                        "placement"))
    if top.doc.get("schema") != SCHEMA:
        raise top.error("schema", f"{top.doc.get('schema')!r}: expected {SCHEMA}")
    ssh = ssh_defaults(_ServerFields, path, top.doc.get("ssh"))
    servers_doc = top.doc.get("servers")
    if not isinstance(servers_doc, dict) or len(servers_doc) < 1:
        raise top.error("servers", "expected a mapping of server name -> fields")
    servers = {str(n): _server(path, str(n), d, ssh) for n, d in servers_doc.items()}
    seen: dict[tuple[str, int], str] = {}
    for s in servers.values():
        key = (s.address, s.ssh.port)
        if key in seen:
            raise top.error(f"servers.{s.name}.address", f"{s.address}:{s.ssh.port} is "
                                                         f"server '{seen[key]}' too")
        seen[key] = s.name
    tunnel = _tunnel(top, "tunnel", top.doc.get("tunnel", "vxlan"))
    links: dict[frozenset[str], str] = {}
    links_doc = top.doc.get("links") or {}
    if not isinstance(links_doc, dict):
        raise top.error("links", "expected a mapping of NODE-NODE -> tunnel kind")
    for key, kind in links_doc.items():
        ends = str(key).split("-")
        if len(ends) != 2 or not all(ends):
            raise top.error(f"links.{key}", "expected two node ids joined by '-', e.g. v1-v2")
        links[frozenset(ends)] = _tunnel(top, f"links.{key}", kind)
    placement_doc = top.doc.get("placement") or {}
    if not isinstance(placement_doc, dict):
        raise top.error("placement", "expected a mapping of node id -> server name")
    placement = {}
    for node, server in placement_doc.items():
        if server not in servers:
            raise top.error(f"placement.{node}", f"{server!r}: expected one of the servers "
                                                 f"({', '.join(servers)})")
        placement[str(node)] = str(server)
    return ClusterSpec(path, servers, tunnel, links, placement)


def load(path: str | Path) -> ClusterSpec:
    """Read and validate a servers file (YAML or JSON)."""
    path = Path(path)
    return parse(path, read_yaml(path, "servers file", ClusterSpecError))


def argument(text: str) -> ClusterSpec:
    """``--cluster SERVERS_YAML``: a valid servers file (its errors name the field)."""
    try:
        return load(text)
    except ClusterSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


CLUSTER_HELP = ("spread the network over the servers this file names (Mininet's cluster "
                "edition; docs/emulation.md, 'Running on several servers')")
