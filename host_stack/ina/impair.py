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

Like netem, it must not change what it measures: a batch's send fates (dropped, duplicated)
are drawn at once (``fates``) and the packets that go now still leave as one batch through
host_stack/ina/batchio.py, so an impaired run pays the same per-packet cost as an unimpaired
one (sent one by one through Python, 0.0001% loss made fig1's rounds 10x slower); which
arrivals are held is drawn in bulk, and one C call per receive holds and releases them.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

import numpy as np

from host_stack.ina.native import _batchio

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # <asm-generic/socket.h>
NONE = np.zeros(0, dtype=np.int64)
UP, RECEIVED, HEAD, TAIL, HELD = range(5)  # ImpairedSocket.state, as _batchio keeps it
# held arrivals drawn at once: recv() asks for room for a whole receive (16384 rows), and a
# draw of 256 (5,000 arrivals at 5%) had make_room() run 6 times a round in each of fig1's
# workers at 1M values
HELD_DRAW = 4096


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


class ImpairedSocket:
    """A UDP socket whose sends are dropped or duplicated and whose arrivals are held back,
    at random (seeded).  host_stack/ina/batchio.py applies the fates to whole batches.

    Its own cost per receive must stay small beside the transport's: it runs in the
    processes it measures, where netem's queue would cost them nothing.  Held back in numpy,
    a dozen array operations per receive made reordering with no delay at all cost fig1's
    rounds 1.18x at 1M values; so the held arrivals are one queue of arrays in arrival
    order that the receive's own C call (``_batchio.recv`` with ``queue``) fills from the
    batch and empties from the front, and which arrivals are held is a list of arrival
    numbers drawn in bulk, not a draw per packet.  That call also reads the clocks: a
    Python step per receive around it (room checks, clock reads) cost fig1's six workers
    4.5 ms of CPU a round at 1M values (their socket receives 19.8 -> 15.3 ms)."""

    def __init__(self, sock: socket.socket, impairment: Impairment) -> None:
        self.sock = sock
        self.imp = impairment
        self.rng = np.random.default_rng(impairment.seed)
        self.dropped = self.duplicated = 0
        # the C side's state (_batchio.reorder): next upcoming entry, rows received, queue
        # head and tail, rows held so far; and when the queue's head is due
        self.state = np.zeros(_batchio.N_REORDER_STATE, dtype=np.int64)
        self.first = np.full(1, np.inf)
        self.upcoming = NONE  # arrival numbers of the next rows held back, ascending
        self.rows = np.zeros((0, 0), np.uint8)  # the held queue, allocated by make_room()
        self.lens, self.ips = np.zeros(0, np.int32), np.zeros(0, np.uint32)
        self.ports, self.due = np.zeros(0, np.uint16), np.zeros(0)
        self.queue = self._queue()
        if impairment.reorder:  # kernel arrival times, so a held packet's delay starts there
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            self.upcoming = self._draw(-1)

    @property
    def counts(self) -> dict[str, int]:
        return {"dropped": self.dropped, "duplicated": self.duplicated,
                "reordered": int(self.state[HELD])}

    @property
    def held(self) -> int:
        """How many arrivals are held now."""
        return int(self.state[TAIL] - self.state[HEAD])

    def fileno(self) -> int:
        return self.sock.fileno()

    def fates(self, k: int) -> np.ndarray:
        """Positions of ``k`` packets sent in order that go: in order, a duplicated one
        twice, a lost one not at all."""
        imp = self.imp
        kept = np.flatnonzero(self.rng.random(k) >= imp.loss)
        copies = np.repeat(kept, np.where(self.rng.random(kept.size) < imp.dup, 2, 1))
        self.dropped += k - kept.size
        self.duplicated += copies.size - kept.size
        return copies

    def _draw(self, last: int) -> np.ndarray:
        """The next ``HELD_DRAW`` held arrival numbers after ``last``: each arrival is held
        with probability ``reorder``, drawn as geometric gaps between held ones."""
        return last + np.cumsum(self.rng.geometric(self.imp.reorder, HELD_DRAW))

    def _queue(self) -> tuple[np.ndarray, ...]:
        """What the C side reads and fills (_batchio's hold_queue), rebuilt with the arrays."""
        return (self.upcoming, self.state, self.first, self.rows, self.lens, self.ips,
                self.ports, self.due)

    def make_room(self, k: int, row_len: int) -> None:
        """Before a receive of up to ``k`` rows: arrival numbers drawn past it, and queue room
        for all of them behind what is held (moved to the front, or into a larger queue)."""
        st = self.state
        end = int(st[RECEIVED]) + k
        last = int(self.upcoming[-1])
        if last < end:
            parts = [self.upcoming[st[UP]:]]
            while last < end:
                parts.append(self._draw(last))
                last = int(parts[-1][-1])
            self.upcoming = np.concatenate(parts)
            st[UP] = 0
        head, tail = int(st[HEAD]), int(st[TAIL])
        if tail + k > self.due.size:
            held = tail - head
            size = self.due.size if held + k <= self.due.size else max(1024, 2 * (held + k))
            queue = (np.zeros((size, row_len), np.uint8), np.zeros(size, np.int32),
                     np.zeros(size, np.uint32), np.zeros(size, np.uint16), np.zeros(size))
            if held:
                for new, old in zip(queue, (self.rows, self.lens, self.ips, self.ports,
                                            self.due), strict=True):
                    new[:held] = old[head:tail]
            self.rows, self.lens, self.ips, self.ports, self.due = queue
            st[HEAD], st[TAIL] = 0, held
        self.queue = self._queue()

    def next_due(self) -> float:
        """When the earliest held packet is due (time.monotonic(); inf: nothing held)."""
        return float(self.first[0])

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
