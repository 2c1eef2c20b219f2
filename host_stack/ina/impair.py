"""Loss, duplication and reordering injected at a UDP socket, for tests and `inart train
--impair` on loopback, where tc netem cannot reach (netem needs a real or veth interface).

It is a test instrument like netem, not a stand-in for a part: the PS and worker run
unchanged over it.  Reordering holds a packet back for ``delay_s`` so later packets overtake it.

Like netem, it must not change what it measures: a batch's fates (dropped, duplicated, held)
are drawn at once (``fates``) and the packets that go now still leave as one batch through
host_stack/ina/batchio.py, so an impaired run pays the same per-packet cost as an unimpaired
one (sent one by one through Python, 0.0001% loss made fig1's rounds 10x slower).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Impairment:
    """Per-packet probabilities applied on send."""

    loss: float = 0.0
    dup: float = 0.0
    reorder: float = 0.0
    delay_s: float = 0.002
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("loss", "dup", "reorder"):
            value = getattr(self, name)
            if not 0 <= value < 1:
                raise ValueError(f"impairment {name}={value}: expected 0 <= p < 1")
        if self.delay_s < 0:
            raise ValueError(f"impairment delay={self.delay_s}: expected >= 0 seconds")

    @property
    def active(self) -> bool:
        return bool(self.loss or self.dup or self.reorder)

    @classmethod
    def parse(cls, text: str, seed: int = 0) -> Impairment:
        """'loss=0.05,dup=0.05,reorder=0.05[,delay=0.002]' -> Impairment."""
        kwargs: dict[str, float] = {}
        for part in filter(None, text.split(",")):
            key, _, value = part.partition("=")
            key = {"delay": "delay_s"}.get(key.strip(), key.strip())
            if key not in ("loss", "dup", "reorder", "delay_s"):
                raise ValueError(f"impairment '{part}': expected loss=, dup=, reorder=, delay=")
            try:
                kwargs[key] = float(value)
            except ValueError:
                raise ValueError(f"impairment '{part}': {value!r} is not a number") from None
        return cls(seed=seed, **kwargs)


@dataclass
class Held:
    """Packets held back for reordering, due together: rows and their destinations."""

    due: float
    rows: np.ndarray
    ips: np.ndarray
    ports: np.ndarray


class ImpairedSocket:
    """A UDP socket whose sends are dropped, duplicated or delayed at random (seeded)."""

    def __init__(self, sock: socket.socket, impairment: Impairment) -> None:
        self.sock = sock
        self.imp = impairment
        self.rng = np.random.default_rng(impairment.seed)
        self.held: list[Held] = []
        self.counts = {"dropped": 0, "duplicated": 0, "reordered": 0}

    def fileno(self) -> int:
        return self.sock.fileno()

    def fates(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Draw the fates of ``k`` packets sent in order: (positions to send now, in order,
        a duplicated one twice; positions to hold back ``delay_s``)."""
        imp = self.imp
        kept = np.flatnonzero(self.rng.random(k) >= imp.loss)
        copies = np.repeat(kept, np.where(self.rng.random(kept.size) < imp.dup, 2, 1))
        late = self.rng.random(copies.size) < imp.reorder
        self.counts["dropped"] += k - kept.size
        self.counts["duplicated"] += copies.size - kept.size
        self.counts["reordered"] += int(late.sum())
        return copies[~late], copies[late]

    def hold(self, rows: np.ndarray, ips: np.ndarray, ports: np.ndarray) -> None:
        """Keep copies of ``rows`` (to ips/ports, one entry each) until ``delay_s`` from now."""
        if rows.shape[0]:
            self.held.append(Held(time.monotonic() + self.imp.delay_s, rows.copy(),
                                  ips.copy(), ports.copy()))

    def take_due(self, now: float | None = None) -> list[Held]:
        """Remove and return the held packets whose delay is over."""
        if not self.held:
            return []
        now = time.monotonic() if now is None else now
        due = [h for h in self.held if h.due <= now]
        if due:
            self.held = [h for h in self.held if h.due > now]
        return due

    def next_due(self) -> float | None:
        """When the earliest held packet is due (None: nothing held)."""
        return min(h.due for h in self.held) if self.held else None

    def release_due(self) -> None:
        """Send held packets whose delay is over, one by one (BatchSocket sends them as a
        batch instead)."""
        for h in self.take_due():
            for row, ip, port in zip(h.rows, h.ips, h.ports, strict=True):
                self.sock.sendto(row.tobytes(), (socket.inet_ntoa(int(ip).to_bytes(4, "big")),
                                                 int(port)))

    def sendto(self, data: bytes, addr: tuple[str, int]) -> int:
        """One packet (control traffic) through the same fates as a batch."""
        self.release_due()
        now, late = self.fates(1)
        for _ in now:
            self.sock.sendto(data, addr)
        if late.size:
            row = np.frombuffer(data, dtype=np.uint8).reshape(1, -1)
            ip = int.from_bytes(socket.inet_aton(socket.gethostbyname(addr[0])), "big")
            self.hold(np.repeat(row, late.size, axis=0), np.full(late.size, ip, np.uint32),
                      np.full(late.size, addr[1], np.uint16))
        return len(data)

    def close(self) -> None:
        self.release_due()
        self.sock.close()


def wrap(sock: socket.socket, impairment: Impairment | None) -> socket.socket | ImpairedSocket:
    """The socket itself when there is nothing to inject."""
    return ImpairedSocket(sock, impairment) if impairment and impairment.active else sock
