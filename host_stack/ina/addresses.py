"""Where each PS and worker listens: an injectable map from node id to (host, port).

Addresses are never hard-coded in the PS or worker: loopback runs get free ports on
127.0.0.1 from ``loopback``; emulated and real hosts pass a JSON file
``{"s1": "10.0.0.5:47000", "w1": "10.0.0.1:47001", ...}`` (DESIGN.md ports by default).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable
from pathlib import Path

from host_stack.ina.wire import GRAD_PORT, RESULT_PORT

Address = tuple[str, int]


class AddressError(ValueError):
    """A missing or malformed address; the message names the node."""


def parse_address(text: str, default_port: int, node: str = "?") -> Address:
    """'host' or 'host:port' -> (host, port)."""
    if not isinstance(text, str) or not text:
        raise AddressError(f"address of '{node}'={text!r}: expected 'host[:port]'")
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise AddressError(f"address of '{node}'={text!r}: port must be 1..65535")
    return host, int(port)


class AddressMap:
    """Node id -> (host, port), plus the reverse lookup the worker uses on RESULTs."""

    def __init__(self, entries: dict[str, Address]) -> None:
        self.entries = dict(entries)

    def __getitem__(self, node: str) -> Address:
        if node not in self.entries:
            raise AddressError(f"no address for node '{node}' in the address map "
                               f"(known: {', '.join(sorted(self.entries))})")
        return self.entries[node]

    def require(self, nodes: Iterable[str]) -> None:
        """Fail early, naming every node that has no address."""
        missing = sorted(set(nodes) - set(self.entries))
        if missing:
            raise AddressError(f"address map has no entry for: {', '.join(missing)}")

    def to_json(self) -> str:
        return json.dumps({k: f"{h}:{p}" for k, (h, p) in sorted(self.entries.items())})

    @classmethod
    def from_json(cls, text: str, ps_ids: Iterable[str] = ()) -> AddressMap:
        """Parse the JSON map; PSs default to GRAD_PORT, everyone else to RESULT_PORT."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AddressError(f"address map: not JSON ({exc})") from exc
        if not isinstance(doc, dict):
            raise AddressError("address map: expected a JSON object {node: 'host[:port]'}")
        ps = set(ps_ids)
        return cls({node: parse_address(addr, GRAD_PORT if node in ps else RESULT_PORT, node)
                    for node, addr in doc.items()})

    @classmethod
    def load(cls, path: str | Path, ps_ids: Iterable[str] = ()) -> AddressMap:
        try:
            return cls.from_json(Path(path).read_text(), ps_ids)
        except OSError as exc:
            raise AddressError(f"address map file {path}: {exc.strerror}") from exc


def free_udp_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Ports the kernel reports free right now (all held open together, so distinct)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def loopback(nodes: Iterable[str], host: str = "127.0.0.1") -> AddressMap:
    """Every node on ``host`` with its own free UDP port (one-machine runs and tests)."""
    nodes = list(nodes)
    return AddressMap(dict(zip(nodes, ((host, p) for p in free_udp_ports(len(nodes), host)),
                               strict=True)))
