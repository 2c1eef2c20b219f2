"""Which emulation owns a switch name, so a killed run's leftovers can be told from a live run.

Switch interfaces (``{switch}-ethN``) live in the root network namespace, so two emulations
with a switch name in common collide, and a run killed with SIGKILL (or one whose teardown is
cut short) leaves its interfaces behind, after which every later run on that machine refused to
start until someone ran ``ip link del`` by hand.  Each emulation therefore binds one abstract
Unix socket per switch name for its lifetime.  The kernel releases the name when the process
dies, however it dies, and abstract names are scoped to the network namespace, as the
interfaces are.  Interfaces whose switch name nobody holds belong to a dead run and are removed
(with their impairment tables); names a live process holds are refused with the interfaces named.
"""

from __future__ import annotations

import errno
import socket
import subprocess
from pathlib import Path

PREFIX = "inart-switch-"  # abstract socket name prefix; one name per switch


class ClaimError(RuntimeError):
    """A switch name is held by a live emulation in this network namespace."""


def impair_table(interface: str) -> str:
    """The nftables netdev table of the loss, duplication and reordering rules on the frames
    leaving ``interface`` (emulation/network/link_impair.py)."""
    return "inart_" + interface.replace("-", "_")


def interfaces_of(switch: str) -> list[str]:
    """The root namespace's interfaces named like ``switch``'s ports."""
    return sorted(p.name for p in Path("/sys/class/net").glob(f"{switch}-eth*"))


class SwitchClaims:
    """Holds the names of one emulation's switches; ``acquire`` then ``release``."""

    def __init__(self, switches: list[str]) -> None:
        self.switches = list(switches)
        self._sockets: list[socket.socket] = []

    def acquire(self) -> list[str]:
        """Claim every name and remove a dead run's interfaces; returns what was removed.

        Claims all names before removing anything, so a refusal leaves the machine untouched.
        """
        held = []
        for sw in self.switches:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind("\0" + PREFIX + sw)
            except OSError as e:
                sock.close()
                if e.errno != errno.EADDRINUSE:
                    raise
                held.append(sw)
                continue
            self._sockets.append(sock)
        if held:
            self.release()
            busy = [i for sw in held for i in interfaces_of(sw)]
            raise ClaimError(f"switch names {', '.join(held)} are in use by another emulation "
                             f"in this network namespace (interfaces: "
                             f"{', '.join(busy) or 'none yet'}): stop it, or rename switches")
        removed = [i for sw in self.switches for i in interfaces_of(sw)]
        for name in removed:
            subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=10)
            subprocess.run(["nft", "delete", "table", "netdev", impair_table(name)],
                           capture_output=True, timeout=10)
        still = [i for sw in self.switches for i in interfaces_of(sw)]
        if still:
            self.release()
            raise ClaimError(f"interfaces {', '.join(still)} were left by a dead emulation and "
                             f"could not be removed with `ip link del`")
        return removed

    def release(self) -> None:
        """Give the names back (the kernel does it too when the process dies)."""
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()


def hold(switches: list[str]) -> int:
    """Claim ``switches`` in this process's network namespace until end of input: how a server
    of a cluster run (emulation/cluster) holds the names of the switches it runs."""
    import sys

    claims = SwitchClaims(switches)
    try:
        removed = claims.acquire()
    except ClaimError as exc:
        print(exc, file=sys.stderr, flush=True)
        return 1
    note = f" removed interfaces a dead run left: {', '.join(removed)}" if removed else ""
    print(f"held{note}", flush=True)
    try:
        sys.stdin.read()
    finally:
        claims.release()
    return 0


if __name__ == "__main__":
    import sys

    if len(sys.argv) < 2:
        sys.exit("usage: python -m emulation.network.switch_claims SWITCH... (holds the names "
                 "until end of input)")
    sys.exit(hold(sys.argv[1:]))
