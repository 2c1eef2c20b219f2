"""veth pairs for tests and benchmarks (root only), always removed on exit."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


def can_create_veths() -> str | None:
    """None when veths can be created here, else the reason why not."""
    if os.geteuid() != 0:
        return "needs root to create veth interfaces"
    if subprocess.run(["ip", "-V"], capture_output=True).returncode != 0:
        return "the 'ip' command (iproute2) is missing"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@contextmanager
def veth_pairs(prefix: str, count: int) -> Iterator[list[tuple[str, str]]]:
    """Create ``count`` pairs (``{prefix}{i}a``, ``{prefix}{i}b``), up, IPv6 off; delete after.

    Names must be unique per user of this helper (Linux limits them to 15 characters).
    """
    pairs = [(f"{prefix}{i}a", f"{prefix}{i}b") for i in range(count)]
    for a, _ in pairs:
        assert len(a) <= 15, f"interface name {a!r} longer than 15 characters"
    made: list[str] = []
    try:
        for a, b in pairs:
            _ip("link", "add", a, "type", "veth", "peer", "name", b)
            made.append(a)
            for name in (a, b):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"],
                               capture_output=True, timeout=10)
                _ip("link", "set", name, "up")
        yield pairs
    finally:
        for a in made:
            subprocess.run(["ip", "link", "del", a], capture_output=True, timeout=10)
