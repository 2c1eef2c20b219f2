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

    @property
    def on_send(self) -> bool:
        """Whether sends have fates to draw (reordering alone acts on arrival only)."""
        return bool(self.loss or self.dup)

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
    """Held arrivals: their rows as received, and when each is due (time.monotonic())."""

    rows: np.ndarray
    lens: np.ndarray
    ips: np.ndarray
    ports: np.ndarray
    due: np.ndarray


class ImpairedSocket:
    """A UDP socket whose sends are dropped or duplicated and whose arrivals are held back,
    at random (seeded).  host_stack/ina/batchio.py applies the fates to whole batches.

    Its own cost per receive must stay small beside the transport's (the instrument runs in
    the processes it measures; at first it took a third of what reordering added to a
    round): the held arrivals are one queue of arrays in arrival order, which a receive
    fills straight from its batch (``reserve``, ``commit``) and empties from the front
    (``take_due``), and which arrivals are held is a running position, not an array."""

    def __init__(self, sock: socket.socket, impairment: Impairment) -> None:
        self.sock = sock
        self.imp = impairment
        self.rng = np.random.default_rng(impairment.seed)
        self.queue: Held | None = None  # allocated by the first reserve()
        self.head = self.tail = 0  # queue[head:tail] is held
        self.first_due = np.inf  # when queue[head] is due: a cheap check per receive
        self.counts = {"dropped": 0, "duplicated": 0, "reordered": 0}
        # positions (counted over every packet received) of the next ones held back, drawn
        # in bulk as geometric gaps, and how many packets were received so far
        self.received = 0
        self.upcoming = NONE
        if impairment.reorder:  # kernel arrival times, so a held packet's delay starts there
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            self._draw(-1)

    @property
    def held(self) -> int:
        """How many arrivals are held now."""
        return self.tail - self.head

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

    def _draw(self, last: int) -> None:
        """The next 256 held positions after position ``last``."""
        self.upcoming = last + np.cumsum(self.rng.geometric(self.imp.reorder, 256))

    def arrivals(self, k: int) -> np.ndarray:
        """Positions (ascending) of the packets held back among ``k`` just received.

        Each packet is held with probability ``reorder``, drawn as geometric gaps between held
        ones (the same law, without a draw per packet: a receive of thousands holds a few),
        and found with one search, not a Python step per held packet."""
        up = self.upcoming
        if not up.size:  # no reordering
            return NONE
        first, end = self.received, self.received + k
        self.received = end
        if up[0] >= end:
            return NONE
        late = []
        while True:
            n = int(np.searchsorted(up, end))
            late.append(up[:n] - first)
            if n < up.size:
                self.upcoming = up[n:]
                break
            self._draw(int(up[-1]))
            up = self.upcoming
        out = late[0] if len(late) == 1 else np.concatenate(late)
        self.counts["reordered"] += out.size
        return out

    def reserve(self, count: int, row_len: int) -> Held:
        """Room for ``count`` more held rows at the queue's tail (views to fill; the due
        field takes the kernel's arrival stamps, ``commit`` turns them into due times)."""
        q = self.queue
        if q is None or self.tail + count > q.due.size:
            held = self.held
            size = max(1024, 2 * (held + count)) if q is None or held + count > q.due.size \
                else q.due.size
            new = Held(np.zeros((size, row_len), np.uint8), np.zeros(size, np.int32),
                       np.zeros(size, np.uint32), np.zeros(size, np.uint16), np.zeros(size))
            if q is not None:
                for a, b in zip((new.rows, new.lens, new.ips, new.ports, new.due),
                                (q.rows, q.lens, q.ips, q.ports, q.due), strict=True):
                    a[:held] = b[self.head:self.tail]
            self.queue, self.head, self.tail, q = new, 0, held, new
        end = self.tail + count
        return Held(q.rows[self.tail:end], q.lens[self.tail:end], q.ips[self.tail:end],
                    q.ports[self.tail:end], q.due[self.tail:end])

    def commit(self, count: int, now: float, clock_offset: float) -> None:
        """Hold the ``count`` rows just written at the tail: each is due ``delay_s`` after
        its kernel stamp (CLOCK_REALTIME, ``clock_offset`` ahead of time.monotonic()), or
        after ``now`` where it has none (0)."""
        due = self.queue.due[self.tail - (self.tail > self.head):self.tail + count]
        fresh = due[int(self.tail > self.head):]
        np.minimum(fresh, now + clock_offset, out=fresh)
        fresh += self.imp.delay_s - clock_offset
        # the queue stays in due order: a stamp read on another clock can jitter by a few
        # microseconds, and such a packet waits that much longer
        np.maximum.accumulate(due, out=due)
        if self.tail == self.head:
            self.first_due = float(fresh[0])
        self.tail += count

    def take_due(self, limit: int, now: float | None = None) -> Held | None:
        """Remove and return the held rows whose delay is over, oldest first, up to
        ``limit``; views valid until the next ``reserve``."""
        now = time.monotonic() if now is None else now
        if self.first_due > now or limit <= 0:
            return None
        q, head = self.queue, self.head
        if q.due[self.tail - 1] <= now:
            count = min(limit, self.tail - head)
        else:
            count = min(limit, int(np.searchsorted(q.due[head:self.tail], now, side="right")))
        self.head = end = head + count
        self.first_due = float(q.due[end]) if end < self.tail else np.inf
        if end == self.tail:
            self.head = self.tail = 0
        return Held(q.rows[head:end], q.lens[head:end], q.ips[head:end], q.ports[head:end],
                    q.due[head:end])

    def next_due(self) -> float | None:
        """When the earliest held packet is due (None: nothing held)."""
        return self.first_due if self.tail > self.head else None

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
