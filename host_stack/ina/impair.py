"""Loss, duplication and reordering injected at a UDP socket, for tests and `inart train
--impair` on loopback, where tc netem cannot reach (netem needs a real or veth interface).

It is a test instrument like netem, not a stand-in for a part: the PS and worker run
unchanged over it.  Loss and duplication act on send.  Reordering acts on arrival, as netem's
delay does: a packet held back is delivered ``delay_s`` after the kernel received it (its
SO_TIMESTAMPNS stamp), so later packets overtake it, and the receiver sees it at its first
receive after that, as it would see a packet netem delayed.  Held on the sending side
instead, a packet left only when its sender next ran: on a loaded 2-core host that added
3 ms on average and up to 30 ms to the 2 ms asked for, so the transport learned reordering
windows of 15-50 ms and rounds paid for a delay nobody configured.

Like netem, it must not change what it measures: a batch's fates (dropped, duplicated, held)
are drawn at once (``fates``, ``arrivals``) and the packets that go now still leave as one
batch through host_stack/ina/batchio.py, so an impaired run pays the same per-packet cost as
an unimpaired one (sent one by one through Python, 0.0001% loss made fig1's rounds 10x slower).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

import numpy as np

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # <asm-generic/socket.h>
NONE = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Impairment:
    """Per-packet probabilities: loss and dup on send, reorder on arrival."""

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
    """Arrivals of one receive held back for reordering: their rows as received, and when
    each is due (time.monotonic())."""

    rows: np.ndarray
    lens: np.ndarray
    ips: np.ndarray
    ports: np.ndarray
    due: np.ndarray

    def split(self, now: float) -> tuple[Held | None, Held | None]:
        """(the rows due at ``now``, the rest)."""
        ready = self.due <= now
        if ready.all():
            return self, None
        if not ready.any():
            return None, self
        parts = [Held(self.rows[m], self.lens[m], self.ips[m], self.ports[m], self.due[m])
                 for m in (ready, ~ready)]
        return parts[0], parts[1]


class ImpairedSocket:
    """A UDP socket whose sends are dropped or duplicated and whose arrivals are held back,
    at random (seeded).  host_stack/ina/batchio.py applies the fates to whole batches."""

    def __init__(self, sock: socket.socket, impairment: Impairment) -> None:
        self.sock = sock
        self.imp = impairment
        self.rng = np.random.default_rng(impairment.seed)
        self.held: list[Held] = []
        self.first_due = np.inf  # min of held.due, kept so a receive with nothing due is cheap
        self.counts = {"dropped": 0, "duplicated": 0, "reordered": 0}
        # positions, counted from the next packet received, of the next ones held back
        self.upcoming = np.array([-1], dtype=np.int64)
        if impairment.reorder:  # kernel arrival times, so a held packet's delay starts there
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            self.upcoming = np.cumsum(self.rng.geometric(impairment.reorder, 64)) - 1

    def fileno(self) -> int:
        return self.sock.fileno()

    def fates(self, k: int) -> np.ndarray:
        """Positions of ``k`` packets sent in order that go: in order, a duplicated one
        twice, a lost one not at all."""
        imp = self.imp
        kept = np.flatnonzero(self.rng.random(k) >= imp.loss)
        copies = np.repeat(kept, np.where(self.rng.random(kept.size) < imp.dup, 2, 1))
        self.counts["dropped"] += k - kept.size
        self.counts["duplicated"] += copies.size - kept.size
        return copies

    def arrivals(self, k: int) -> np.ndarray:
        """Positions (ascending) of the packets held back among ``k`` just received.

        Each packet is held with probability ``reorder``, drawn as geometric gaps between held
        ones (the same law, without a draw per packet: a receive of thousands holds a few)."""
        p = self.imp.reorder
        if not p or self.upcoming[0] >= k:
            self.upcoming -= k
            return NONE
        while self.upcoming[-1] < k:
            more = self.upcoming[-1] + np.cumsum(self.rng.geometric(p, 256))
            self.upcoming = np.concatenate([self.upcoming, more])
        n = int(np.searchsorted(self.upcoming, k))
        late, self.upcoming = self.upcoming[:n], self.upcoming[n:] - k
        self.counts["reordered"] += n
        return late

    def hold(self, held: Held) -> None:
        """Keep received rows (``held``, taken out of the receive buffer) until their due
        times."""
        self.held.append(held)
        self.first_due = min(self.first_due, float(held.due.min()))

    def take_due(self, limit: int, now: float | None = None) -> list[Held]:
        """Remove and return held rows whose delay is over, oldest first, up to about
        ``limit`` rows (whole receives at a time; at least the first one due)."""
        now = time.monotonic() if now is None else now
        if self.first_due > now:
            return []
        out: list[Held] = []
        kept: list[Held] = []
        taken = 0
        for h in self.held:
            ready, rest = h.split(now) if taken < limit else (None, h)
            if ready is not None and (not out or taken + ready.due.size <= limit):
                out.append(ready)
                taken += ready.due.size
            elif ready is not None:
                rest = h
            if rest is not None:
                kept.append(rest)
        self.held = kept
        self.first_due = min((float(h.due.min()) for h in kept), default=np.inf)
        return out

    def next_due(self) -> float | None:
        """When the earliest held packet is due (None: nothing held)."""
        return self.first_due if self.held else None

    def sendto(self, data: bytes, addr: tuple[str, int]) -> int:
        """One packet (control traffic) through the same fates as a batch."""
        for _ in self.fates(1):
            self.sock.sendto(data, addr)
        return len(data)

    def close(self) -> None:
        self.sock.close()


def wrap(sock: socket.socket, impairment: Impairment | None) -> socket.socket | ImpairedSocket:
    """The socket itself when there is nothing to inject."""
    return ImpairedSocket(sock, impairment) if impairment and impairment.active else sock
