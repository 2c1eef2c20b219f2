"""A star of network namespaces with tc-limited links, for the real PS-balancing run.

Hub namespace with a bridge; node i in its own namespace behind a veth pair whose both ends
carry a tbf qdisc at the node's rate (its egress on the node side, its ingress on the hub
side).  The launcher reaches the bridge through one more, unlimited veth from the root
namespace (control traffic only).  Namespaces and veths come from host_stack.netns, whose
context managers remove everything on exit, also after a failure part-way through.  Names
carry a per-process prefix so runs never collide.  Needs root and iproute2.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from host_stack.netns import Netns, can_create_veths, ip, link, namespaces, veth_pairs


class StarLab:
    """N nodes at 10.<a>.<b>.(i+1)/24; the launcher at .254 of the same subnet.

    Only names and addresses until ``star_lab`` builds it."""

    def __init__(self, n: int) -> None:
        if not 2 <= n <= 100:
            raise ValueError(f"n: expected 2..100 nodes, got {n}")
        reason = can_create_veths()
        if reason:
            raise PermissionError(f"StarLab {reason} (and tc)")
        self.n = n
        tag = os.getpid() % 0xFFFF
        self.prefix = f"pb{tag:04x}"
        self.subnet = f"10.{200 + tag % 50}.{tag % 250}"
        self.hub = f"{self.prefix}hub"
        self.nodes = [f"{self.prefix}n{i}" for i in range(n)]
        self.node_ns: list[Netns] = []

    def addr(self, i: int) -> str:
        return f"{self.subnet}.{i + 1}"

    @property
    def launcher_addr(self) -> str:
        return f"{self.subnet}.254"

    def node_dev(self, i: int) -> str:
        """Node i's end of its link (in its namespace); the hub's end is ``hub_dev``."""
        return f"{self.prefix}a{i}"

    def hub_dev(self, i: int) -> str:
        return f"{self.prefix}b{i}"

    def wire(self, hub: Netns, nodes: list[Netns], root_dev: str, bridge_dev: str) -> None:
        """Bridge every node and the root namespace's ``root_dev`` (peer ``bridge_dev``)."""
        ip("-n", hub.name, "link", "add", "br0", "type", "bridge")
        ip("-n", hub.name, "link", "set", "br0", "up")
        for i, ns in enumerate(nodes):
            link(ns, self.node_dev(i), hub, self.hub_dev(i), a_addr=f"{self.addr(i)}/24")
            ip("-n", hub.name, "link", "set", self.hub_dev(i), "master", "br0")
        ip("link", "set", bridge_dev, "netns", hub.name)
        hub.configure(bridge_dev)
        ip("-n", hub.name, "link", "set", bridge_dev, "master", "br0")
        ip("addr", "add", f"{self.launcher_addr}/24", "dev", root_dev)
        self.node_ns = nodes

    def set_rates(self, mbit: Sequence[float]) -> None:
        """Limit node i's egress and ingress to mbit[i] Mbit/s (tbf, replaced in place)."""
        if len(mbit) != self.n or min(mbit) <= 0:
            raise ValueError(f"mbit: expected {self.n} positive rates")
        for i, rate in enumerate(mbit):
            # a small bucket (>= 2 MTU) so a 40 kB probe is timed at the shaped rate
            burst = str(max(3100, int(rate * 1e6 / 8 / 1000)))
            spec = ["root", "tbf", "rate", f"{rate:.3f}mbit", "burst", burst,
                    "latency", "200ms"]
            for ns, dev in ((self.nodes[i], self.node_dev(i)), (self.hub, self.hub_dev(i))):
                subprocess.run(["tc", "-n", ns, "qdisc", "replace", "dev", dev, *spec],
                               check=True, capture_output=True, timeout=20)

    def popen(self, i: int, argv: Sequence[str], **kw: object) -> subprocess.Popen[bytes]:
        """Start a process inside node i's namespace."""
        return subprocess.Popen([*self.node_ns[i].exec_prefix(), *argv], **kw)  # type: ignore[call-overload]


@contextmanager
def star_lab(n: int) -> Iterator[StarLab]:
    """A built StarLab of ``n`` nodes; every namespace and veth is gone when it exits."""
    lab = StarLab(n)
    with namespaces([lab.hub, *lab.nodes]) as (hub, *nodes), \
            veth_pairs(f"{lab.prefix}r", 1) as [(root_dev, bridge_dev)]:
        lab.wire(hub, nodes, root_dev, bridge_dev)
        yield lab
