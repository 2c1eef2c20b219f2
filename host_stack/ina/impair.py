"""Loss, duplication and reordering injected at a UDP socket, for tests and `inart train
--impair` on loopback, where tc netem cannot reach (netem needs a real or veth interface).

It is a test instrument like netem, not a stand-in for a part: the PS and worker run
unchanged over it.  Reordering holds a packet back for ``delay_s`` so later packets overtake it.
"""

from __future__ import annotations

import random
import socket
import time
from dataclasses import dataclass


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


class ImpairedSocket:
    """A UDP socket whose sends are dropped, duplicated or delayed at random (seeded)."""

    def __init__(self, sock: socket.socket, impairment: Impairment) -> None:
        self.sock = sock
        self.imp = impairment
        self.rng = random.Random(impairment.seed)
        self.held: list[tuple[float, bytes, tuple[str, int]]] = []
        self.counts = {"dropped": 0, "duplicated": 0, "reordered": 0}

    def fileno(self) -> int:
        return self.sock.fileno()

    def release_due(self) -> None:
        """Send held packets whose delay is over."""
        if self.held:
            now = time.monotonic()
            due = [h for h in self.held if h[0] <= now]
            self.held = [h for h in self.held if h[0] > now]
            for _, data, addr in due:
                self.sock.sendto(data, addr)

    def sendto(self, data: bytes, addr: tuple[str, int]) -> int:
        self.release_due()
        r = self.rng.random()
        if r < self.imp.loss:
            self.counts["dropped"] += 1
            return len(data)
        copies = 2 if self.rng.random() < self.imp.dup else 1
        self.counts["duplicated"] += copies - 1
        for _ in range(copies):
            if self.rng.random() < self.imp.reorder:
                self.counts["reordered"] += 1
                self.held.append((time.monotonic() + self.imp.delay_s, bytes(data), addr))
            else:
                self.sock.sendto(data, addr)
        return len(data)

    def close(self) -> None:
        self.release_due()
        self.sock.close()


def wrap(sock: socket.socket, impairment: Impairment | None) -> socket.socket | ImpairedSocket:
    """The socket itself when there is nothing to inject."""
    return ImpairedSocket(sock, impairment) if impairment and impairment.active else sock
