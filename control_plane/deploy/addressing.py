"""Deterministic addresses of a deployed network (emulated or real), shared by the network and
the entries.

Both the Mininet network (emulation/network/mininet_net.py) and the plan -> P4Runtime compiler
(control_plane/deploy/entries.py) take every IPv4 address, MAC, port number and gRPC port from one
``Addressing``, so the table entries always name what the network really has.

Layout, all inside 10.0.0.0/8 (every host routes the /8 on its one interface):
- worker number i (1-based, natural id order): 10.1.x.y, PS i: 10.2.x.y, switch i's
  aggregation address (IPv4 source of its aggregated packets): 10.3.x.y, job j's result
  address (the PSs send RESULTs there; switches replicate them): 10.4.x.y; x.y encodes i.
- MACs: 02:00:KK:00:II:II (locally administered), KK = 01 worker, 02 PS, 05 switch.
- switch ports: a switch's neighbours in natural id order get ports 1, 2, ...
- P4Runtime: switch i is device i and listens on loopback at a port that was free when the
  addresses were assigned (no fixed ports: another emulation, `inart serve` or anything else
  may hold any given one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from control_plane.localhost import free_ports
from control_plane.model.topology import Topology, natural_key

MAX_INDEX = 254 * 256  # x.y encoding below; far more nodes than a laptop can emulate
KIND_OCTET = {"worker": 1, "ps": 2, "agg": 3, "result": 4}
MAC_KIND = {"worker": 1, "ps": 2, "switch": 5}


class AddressingError(ValueError):
    """A topology the emulation cannot address; the message names the node."""


def _ip(kind: str, index: int) -> str:
    if not 1 <= index <= MAX_INDEX:
        raise AddressingError(f"{kind} number {index}: expected 1..{MAX_INDEX}")
    return f"10.{KIND_OCTET[kind]}.{index // 254}.{index % 254 + 1}"


def _mac(kind: str, index: int) -> str:
    return f"02:00:{MAC_KIND[kind]:02x}:00:{index >> 8 & 0xFF:02x}:{index & 0xFF:02x}"


@dataclass(frozen=True)
class Addressing:
    """Every address and port of one emulated topology."""

    ip: dict[str, str]  # worker/PS id -> IPv4
    mac: dict[str, str]  # worker/PS/switch id -> MAC
    agg_addr: dict[str, str]  # switch id -> aggregation source address
    port: dict[tuple[str, str], int]  # (switch, neighbour) -> port number on the switch
    device_id: dict[str, int]  # switch id -> P4Runtime device id
    grpc_port: dict[str, int] = field(default_factory=dict)  # switch id -> loopback TCP port
    tor: dict[str, str] = field(default_factory=dict)  # host -> the one switch it hangs off
    grpc_host: dict[str, str] = field(default_factory=dict)  # switch -> its server's address

    def grpc_address(self, switch: str) -> str:
        """host:port of a switch's P4Runtime server (loopback, or the address of the server
        that runs it in an emulation over several servers)."""
        return f"{self.grpc_host.get(switch, '127.0.0.1')}:{self.grpc_port[switch]}"

    @staticmethod
    def result_addr(job: int) -> str:
        """The address a job's PSs send RESULTs to; switches turn it into per-worker copies."""
        if not 0 <= job < 1 << 16:
            raise AddressingError(f"job {job}: expected 0..65535")
        return _ip("result", job + 1)

    def neighbour_of(self, switch: str, port: int) -> str:
        for (sw, nb), p in self.port.items():
            if sw == switch and p == port:
                return nb
        raise AddressingError(f"switch '{switch}' has no port {port}")


def assign(topology: Topology, grpc_ports: Mapping[str, int] | None = None) -> Addressing:
    """Addresses for a topology; hosts must hang off exactly one switch (one interface).

    ``grpc_ports``: each switch's P4Runtime port; by default ports free right now.
    """
    ip: dict[str, str] = {}
    mac: dict[str, str] = {}
    for kind in ("worker", "ps"):
        for i, node in enumerate(topology.ids(kind), start=1):
            ip[node] = _ip(kind, i)
            mac[node] = _mac(kind, i)
    agg: dict[str, str] = {}
    device: dict[str, int] = {}
    for i, sw in enumerate(topology.switches, start=1):
        agg[sw] = _ip("agg", i)
        mac[sw] = _mac("switch", i)
        device[sw] = i
    grpc = dict(zip(topology.switches, free_ports(len(device)), strict=True)) \
        if grpc_ports is None else dict(grpc_ports)
    for sw in topology.switches:
        if not 1 <= grpc.get(sw, 0) <= 65535:
            raise AddressingError(f"switch '{sw}': gRPC port {grpc.get(sw)}: expected a "
                                  f"TCP port 1..65535 for every switch")
    graph = topology.graph
    ports: dict[tuple[str, str], int] = {}
    for sw in topology.switches:
        for p, nb in enumerate(sorted(graph[sw], key=natural_key), start=1):
            ports[(sw, nb)] = p
    tor: dict[str, str] = {}
    for host in topology.workers + topology.pss:
        attached = sorted(graph[host], key=natural_key)
        if len(attached) != 1 or topology.nodes[attached[0]].kind != "switch":
            raise AddressingError(
                f"node '{host}': attached to {attached or 'nothing'}; the emulation needs "
                f"every worker and PS attached to exactly one switch")
        tor[host] = attached[0]
    return Addressing(ip=ip, mac=mac, agg_addr=agg, port=ports, device_id=device,
                      grpc_port=grpc, tor=tor)
