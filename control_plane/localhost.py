"""Free TCP ports on 127.0.0.1 for the servers that launchers, benches and tests start
(switches' P4Runtime, the controller service, gloo stores): one helper, so all pick them alike."""

from __future__ import annotations

import socket


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports that were free a moment ago (all held while choosing, so none
    repeats; the caller binds them right after)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    """One port on 127.0.0.1 that was free a moment ago."""
    return free_ports(1)[0]
