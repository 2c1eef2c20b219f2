"""Free TCP ports on 127.0.0.1 for the servers that launchers, benches and tests start
(switches' P4Runtime, the controller service, gloo stores): one helper, so all pick them alike;
and who holds a port that is taken."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

from control_plane.quote import quote

SERVICE_PORT = 50070  # `inart serve`'s default port: clients find the service there
DEFAULTS = frozenset({SERVICE_PORT})  # ports a free port is never taken from


class AddressError(ValueError):
    """An address that is no HOST:PORT; the message says what was expected."""


def split_address(address: str, any_port: bool = False) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` for IPv6) -> (host, port); port 0 ("any free") only with
    ``any_port``; raises AddressError."""
    host, sep, port = address.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    low = 0 if any_port else 1
    # ASCII digits only: str.isdigit() also holds for '²', which int() refuses
    if (not sep or not host or not (port.isascii() and port.isdigit())
            or not low <= int(port) < 65536):
        raise AddressError(f"address {quote(address)}: expected HOST:PORT with a port "
                           f"{low}..65535")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports that were free a moment ago (all held while choosing, so none
    repeats; the caller binds them right after), never one of ``DEFAULTS``: a switch on the
    service's port would make a later `inart serve` fail."""
    socks: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < n:
            s = socket.socket()
            socks.append(s)  # a default stays bound until the end, so it is not offered again
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
            if port not in DEFAULTS:
                ports.append(port)
        return ports
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    """One port on 127.0.0.1 that was free a moment ago."""
    return free_ports(1)[0]


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on TCP ``port`` (any local address) in this network namespace."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # local_address is HEXIP:HEXPORT, st 0A is LISTEN, inode is the 10th field
            if len(fields) > 9 and fields[3] == "0A" and \
                    int(fields[1].rpartition(":")[2], 16) == port:
                inodes.add(fields[9])
    return inodes


def port_holder(port: int) -> str:
    """Who listens on TCP ``port`` here: "pid N (command line)" for each process holding the
    socket, or what is known when that cannot be read (another user's process, another
    namespace's): a refusal names the real holder instead of guessing."""
    inodes = _listening_inodes(port)
    if not inodes:
        return "no listener found in /proc/net/tcp (a connection, or another namespace)"
    targets = {f"socket:[{i}]" for i in inodes}
    holders = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in targets for fd in (proc / "fd").iterdir()):
                cmd = " ".join((proc / "cmdline").read_bytes().decode(errors="replace")
                               .replace("\0", " ").split())
                holders.append(f"pid {proc.name} ({cmd[:200] or '?'})")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return ", ".join(holders) or f"socket inode {', '.join(sorted(inodes))} (no process of " \
                                 f"ours holds it)"
