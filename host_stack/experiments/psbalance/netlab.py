"""A star of network namespaces with tc-limited links, for the real PS-balancing run.

Hub namespace with a bridge; node i in its own namespace behind a veth pair whose both ends
carry a tbf qdisc at the node's rate (its egress on the node side, its ingress on the hub
side).  The launcher reaches the bridge through one more, unlimited veth from the root
namespace (control traffic only).  Names carry a per-process prefix so runs never collide;
``close`` (also on exceptions, via the context manager) deletes every namespace and the root
veth.  Needs root and iproute2.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


class StarLab:
    """N nodes at 10.<a>.<b>.(i+1)/24; the launcher at .254 of the same subnet."""

    def __init__(self, n: int) -> None:
        if not 2 <= n <= 100:
            raise ValueError(f"n: expected 2..100 nodes, got {n}")
        if os.geteuid() != 0:
            raise PermissionError("StarLab needs root (network namespaces and tc)")
        self.n = n
        tag = os.getpid() % 0xFFFF
        self.prefix = f"pb{tag:04x}"
        self.subnet = f"10.{200 + tag % 50}.{tag % 250}"
        self.hub = f"{self.prefix}hub"
        self.nodes = [f"{self.prefix}n{i}" for i in range(n)]
        self.root_if = f"{self.prefix}r"
        self._made: list[str] = []

    def addr(self, i: int) -> str:
        return f"{self.subnet}.{i + 1}"

    @property
    def launcher_addr(self) -> str:
        return f"{self.subnet}.254"

    def __enter__(self) -> StarLab:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        _ip("netns", "add", self.hub)
        self._made.append(self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        for i, ns in enumerate(self.nodes):
            _ip("netns", "add", ns)
            self._made.append(ns)
            a, b = f"{self.prefix}a{i}", f"{self.prefix}b{i}"
            _ip("link", "add", a, "type", "veth", "peer", "name", b)
            _ip("link", "set", a, "netns", ns)
            _ip("link", "set", b, "netns", self.hub)
            _ip("-n", ns, "link", "set", a, "name", "eth0")
            _ip("-n", ns, "addr", "add", f"{self.addr(i)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", self.hub, "link", "set", b, "master", "br0")
            _ip("-n", self.hub, "link", "set", b, "up")
        _ip("link", "add", self.root_if, "type", "veth", "peer", "name", f"{self.prefix}q")
        self._made.append(self.root_if)
        _ip("link", "set", f"{self.prefix}q", "netns", self.hub)
        _ip("-n", self.hub, "link", "set", f"{self.prefix}q", "master", "br0")
        _ip("-n", self.hub, "link", "set", f"{self.prefix}q", "up")
        _ip("addr", "add", f"{self.launcher_addr}/24", "dev", self.root_if)
        _ip("link", "set", self.root_if, "up")

    def set_rates(self, mbit: Sequence[float]) -> None:
        """Limit node i's egress and ingress to mbit[i] Mbit/s (tbf, replaced in place)."""
        if len(mbit) != self.n or min(mbit) <= 0:
            raise ValueError(f"mbit: expected {self.n} positive rates")
        for i, rate in enumerate(mbit):
            # a small bucket (>= 2 MTU) so a 40 kB probe is timed at the shaped rate
            burst = str(max(3100, int(rate * 1e6 / 8 / 1000)))
            spec = ["root", "tbf", "rate", f"{rate:.3f}mbit", "burst", burst,
                    "latency", "200ms"]
            for ns, dev in ((self.nodes[i], "eth0"), (self.hub, f"{self.prefix}b{i}")):
                subprocess.run(["tc", "-n", ns, "qdisc", "replace", "dev", dev, *spec],
                               check=True, capture_output=True, timeout=20)

    def popen(self, i: int, argv: Sequence[str], **kw: object) -> subprocess.Popen[bytes]:
        """Start a process inside node i's namespace."""
        return subprocess.Popen(["ip", "netns", "exec", self.nodes[i], *argv], **kw)  # type: ignore[call-overload]

    def close(self) -> None:
        """Delete everything this lab made; safe to call twice."""
        for name in reversed(self._made):
            if name == self.root_if:
                subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=20)
            else:
                subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=20)
        self._made.clear()
