"""Network namespaces and veth pairs for test hosts, PTF runs and benches (root, iproute2).

The one module that creates them (Mininet keeps its own for emulated networks).  Everything
made here is removed on exit, also after an error part-way through: ``Netns`` deletes its
namespace (which takes its interfaces along), ``veth_pairs`` deletes the pairs it made in the
root namespace.  Names must be unique per user (Linux limits interfaces to 15 characters).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


class NetnsError(RuntimeError):
    """An ip(8) command failed; the message has the command and its error output."""


def can_create_veths() -> str | None:
    """None when namespaces and veths can be created here, else the reason why not."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces and veth interfaces"
    if shutil.which("ip") is None:
        return "the 'ip' command (iproute2) is missing"
    return None


def ip(*args: str, timeout: float = 20.0) -> None:
    """Run ``ip ARGS``; NetnsError with its stderr when it fails."""
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise NetnsError(f"'ip {' '.join(args)}' failed: {proc.stderr.strip()}")


def _quiet_ipv6(name: str, netns: str | None = None) -> None:
    """No IPv6 on an interface: its router solicitations would reach the switch under test."""
    prefix = ["ip", "netns", "exec", netns] if netns else []
    subprocess.run([*prefix, "sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"],
                   capture_output=True, timeout=10)


@contextmanager
def veth_pairs(prefix: str, count: int) -> Iterator[list[tuple[str, str]]]:
    """Create ``count`` pairs (``{prefix}{i}a``, ``{prefix}{i}b``) in the root namespace, up,
    IPv6 off; delete them afterwards."""
    pairs = [(f"{prefix}{i}a", f"{prefix}{i}b") for i in range(count)]
    for a, _ in pairs:
        if len(a) > 15:
            raise NetnsError(f"interface name {a!r} longer than 15 characters")
    made: list[str] = []
    try:
        for a, b in pairs:
            ip("link", "add", a, "type", "veth", "peer", "name", b)
            made.append(a)
            for name in (a, b):
                _quiet_ipv6(name)
                ip("link", "set", name, "up")
        yield pairs
    finally:
        for a in made:
            subprocess.run(["ip", "link", "del", a], capture_output=True, timeout=10)


def root_veth(a: str, b: str) -> None:
    """A veth pair ``a`` <-> ``b`` in the root namespace, up, IPv6 off (deleted with either
    end: ``ip link del a``)."""
    for name in (a, b):
        if len(name) > 15:
            raise NetnsError(f"interface name {name!r} longer than 15 characters")
    ip("link", "add", a, "type", "veth", "peer", "name", b)
    for name in (a, b):
        _quiet_ipv6(name)
        ip("link", "set", name, "up")


class Netns:
    """A network namespace with loopback up and IPv6 off; a context manager that deletes it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.made = False

    def __enter__(self) -> Netns:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.delete()

    def create(self) -> Netns:
        ip("netns", "add", self.name)
        self.made = True
        try:
            subprocess.run([*self.exec_prefix(), "sysctl", "-qw",
                            "net.ipv6.conf.all.disable_ipv6=1",
                            "net.ipv6.conf.default.disable_ipv6=1"], capture_output=True,
                           timeout=10)
            ip("-n", self.name, "link", "set", "lo", "up")
        except BaseException:
            self.delete()
            raise
        return self

    def delete(self) -> None:
        """Remove the namespace and its interfaces; safe to call twice."""
        if self.made:
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)
            self.made = False

    def exec_prefix(self) -> list[str]:
        """Prefix that runs a command inside this namespace."""
        return ["ip", "netns", "exec", self.name]

    def add_veth(self, a: str, b: str) -> None:
        """A veth pair ``a`` <-> ``b`` with both ends inside this namespace, up."""
        ip("-n", self.name, "link", "add", a, "type", "veth", "peer", "name", b)
        for dev in (a, b):
            ip("-n", self.name, "link", "set", dev, "up")

    def uplink(self, dev: str, peer: str, address: str | None = None) -> None:
        """A veth pair: ``dev`` in this namespace (with ``address``, CIDR), ``peer`` in the
        root namespace (where a switch or the machine's own stack takes it), both up."""
        ip("link", "add", peer, "type", "veth", "peer", "name", dev, "netns", self.name)
        _quiet_ipv6(peer)
        ip("link", "set", peer, "up")
        self.configure(dev, address)

    def configure(self, dev: str, address: str | None = None) -> None:
        """Bring ``dev`` up in this namespace, with ``address`` (CIDR) if given."""
        if address:
            ip("-n", self.name, "addr", "add", address, "dev", dev)
        ip("-n", self.name, "link", "set", dev, "up")


def link(a: Netns, a_dev: str, b: Netns, b_dev: str, a_addr: str | None = None,
         b_addr: str | None = None) -> None:
    """Join two namespaces with a veth pair (``a_dev`` in ``a``, ``b_dev`` in ``b``), up."""
    ip("link", "add", a_dev, "type", "veth", "peer", "name", b_dev)
    try:
        for ns, dev, addr in ((a, a_dev, a_addr), (b, b_dev, b_addr)):
            ip("link", "set", dev, "netns", ns.name)
            ns.configure(dev, addr)
    except BaseException:
        subprocess.run(["ip", "link", "del", a_dev], capture_output=True, timeout=10)
        raise


@contextmanager
def namespaces(names: Sequence[str]) -> Iterator[list[Netns]]:
    """Several namespaces at once, all deleted on exit (also when creating one fails)."""
    made: list[Netns] = []
    try:
        for name in names:
            made.append(Netns(name).create())
        yield made
    finally:
        for ns in reversed(made):
            ns.delete()
