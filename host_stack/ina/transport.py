"""The worker side of the INA transport: reliable, paced, windowed exchange of one round.

For every PS the worker sends the round's GRAD chunks (chunk index within that PS's shard,
slot = chunk mod pool size, bitmap = its rank bit, count 1), keeps at most ``window`` chunks
outstanding per PS, paces each PS's stream to its target rate, and waits for the RESULT of
every chunk.  A chunk with no RESULT after the retransmission timeout is resent with the RETX
flag; the timeout doubles on every resend (capped at ``max_timeout_s``) and after
``max_retries`` resends the round fails with PsUnreachable naming the PS: never a hang.

The timeout adapts like TCP's (RFC 6298: srtt + 4 rttvar; Karn's rule: only chunks that no
worker retransmitted give samples, which the PS marks by leaving RETX clear on the RESULT),
between ``min_timeout_s`` and ``max_timeout_s``, and towards a paced PS never below the time
the window takes at the paced rate (``rto_floor``).  Here the "RTT" is the time
until the chunk is complete, which includes waiting for the slowest worker.  Workers send each
PS's chunks in order, so a timed-out chunk below the highest completed one was really lost and
is resent; above it, the PS is most likely waiting for a slower worker, and only the PROBES
oldest outstanding chunks are resent (with backoff) instead of the whole window.

RESULTs are matched to a PS by their source address (through a switch, the multicast copy
keeps the PS as source).  Everything unexpected is counted and dropped, never raised.
"""

from __future__ import annotations

import heapq
import select
import socket
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

from host_stack.ina import wire
from host_stack.ina.addresses import Address
from host_stack.ina.impair import ImpairedSocket
from host_stack.ina.pacing import FRAME_OVERHEAD, Pacer

RECV_BUFFER = 4 * 1024 * 1024
PROBES = 4  # oldest outstanding chunks per PS that may be resent while no later one completed


class TransportError(RuntimeError):
    """The transport could not finish a round."""


class PsUnreachable(TransportError):
    """A PS did not answer within the retry budget."""


@dataclass(frozen=True)
class TransportConfig:
    """Knobs of the reliable transport; defaults suit loopback and small emulated networks."""

    n: int = wire.DEFAULT_N
    window: int = 32  # per PS; loopback BDP is tiny, a larger window only adds queueing delay
    timeout_s: float = 0.2  # first retransmission timeout, before any RTT sample
    min_timeout_s: float = 0.01
    max_timeout_s: float = 1.0
    max_retries: int = 30
    pool_size: int = 4096
    hello_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if self.window < 1 or self.pool_size < 1 or self.max_retries < 0:
            raise ValueError("transport: window and pool_size must be >= 1, max_retries >= 0")
        if not 0 < self.min_timeout_s <= self.timeout_s <= self.max_timeout_s:
            raise ValueError("transport: expected 0 < min_timeout_s <= timeout_s <= "
                             "max_timeout_s")


@dataclass(frozen=True)
class PsLink:
    """One PS as the worker sees it."""

    name: str
    address: Address
    rate_bps: float | None


def make_socket(bind: Address) -> socket.socket:
    """A non-blocking UDP socket with large buffers, bound to ``bind``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        sock.setsockopt(socket.SOL_SOCKET, opt, RECV_BUFFER)
    sock.bind(bind)
    sock.setblocking(False)
    return sock


class _PsRound:
    """Send state of one round towards one PS."""

    def __init__(self, link: PsLink, rows: np.ndarray, retx_rows: np.ndarray, n: int,
                 rto_floor: float) -> None:
        self.link = link
        self.rto_floor = rto_floor
        self.rows = rows
        self.retx_rows = retx_rows
        self.n_chunks = rows.shape[0]
        self.next_new = 0
        self.outstanding: dict[int, int] = {}  # chunk -> resends so far
        self.done = np.zeros(self.n_chunks, dtype=bool)
        self.sent_at = np.zeros(self.n_chunks, dtype=np.float64)
        self.max_done = -1  # highest chunk with a RESULT
        self.low = 0  # lowest chunk without a RESULT
        self.results = np.zeros((self.n_chunks, n), dtype=np.int32)
        self.pacer = Pacer(link.rate_bps)

    def oldest_outstanding(self) -> int:
        while self.low < self.n_chunks and self.done[self.low]:
            self.low += 1
        return self.low


class WorkerTransport:
    """Exchanges quantized gradient shards for RESULT payloads, one round at a time."""

    def __init__(self, sock: socket.socket | ImpairedSocket, job: int, rank: int,
                 links: list[PsLink], config: TransportConfig | None = None) -> None:
        self.sock = sock
        self.job = job
        self.rank = rank
        self.bit = wire.rank_bit(rank)
        self.links = links
        self.cfg = config or TransportConfig()
        self.by_source = {link.address: i for i, link in enumerate(links)}
        self.by_host: dict[str, int] = {}
        for i, link in enumerate(links):
            self.by_host.setdefault(link.address[0], i)
        self.counters: Counter[str] = Counter()
        self.buf = bytearray(65536)
        self.frame = wire.packet_len(self.cfg.n) + FRAME_OVERHEAD
        self.srtt: float | None = None
        self.rttvar = 0.0

    @property
    def rto(self) -> float:
        """Current first retransmission timeout in seconds."""
        if self.srtt is None:
            return self.cfg.timeout_s
        return min(self.cfg.max_timeout_s,
                   max(self.cfg.min_timeout_s, self.srtt + 4 * self.rttvar))

    def rto_floor(self, link: PsLink) -> float:
        """The least timeout towards a paced PS: the time its window takes at the paced rate.

        Where the plan loads a link to 100%, the queue there can hold every stream's window
        (emulation/network.py sizes it so), and draining it takes about window x frame / rate
        for a stream of that rate: a RESULT that late is queued, not lost.  The RTT samples do
        not see this coming (they include waiting for the slowest worker, which swings as
        workers get the CPU), and every spurious timeout of an aggregated chunk is resent by
        each worker, unaggregated, into that same full link.
        """
        if link.rate_bps is None:
            return 0.0
        return min(self.cfg.max_timeout_s, self.cfg.window * self.frame * 8 / link.rate_bps)

    def _rtt_sample(self, rtt: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt

    # -- helpers -----------------------------------------------------------------------------
    def _ps_of(self, addr: tuple[str, int]) -> int | None:
        i = self.by_source.get(addr)
        return self.by_host.get(addr[0]) if i is None else i

    def _wait(self, timeout: float) -> bool:
        release = getattr(self.sock, "release_due", None)
        if release is not None:
            release()
            timeout = min(timeout, 0.002)
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        return bool(ready)

    def _send(self, data: bytes | memoryview, addr: Address) -> None:
        try:
            self.sock.sendto(data, addr)
        except BlockingIOError:
            self.counters["send_buffer_full"] += 1  # the retransmission timer covers it
        except OSError as exc:
            self.counters["send_error"] += 1
            self.counters[f"send_error_{exc.errno}"] += 1

    def _packets(self, round_: int, payload: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        count = payload.shape[0]
        chunks = np.arange(count, dtype=np.uint32)
        hdrs = wire.headers(count, wire.TYPE_GRAD, self.job, round_, chunks,
                            chunks % self.cfg.pool_size, self.bit)
        rows = wire.pack_batch(hdrs, payload, n=self.cfg.n)
        retx = rows.copy()
        retx[:, 1] |= wire.FLAG_RETX
        return rows, retx

    # -- handshake ---------------------------------------------------------------------------
    def hello(self) -> None:
        """Check every PS is up and serves this job before the first round (clear error)."""
        pending = set(range(len(self.links)))
        deadline = time.monotonic() + self.cfg.hello_timeout_s
        zeros = bytes(4 * self.cfg.n)
        next_send = 0.0
        while pending:
            now = time.monotonic()
            if now >= deadline:
                names = ", ".join(f"{self.links[i].name} at {self.links[i].address}"
                                  for i in sorted(pending))
                raise PsUnreachable(f"worker rank {self.rank}: no HELLO reply from PS {names} "
                                    f"within {self.cfg.hello_timeout_s:.0f} s (job {self.job})")
            if now >= next_send:
                for i in pending:
                    self._send(wire.pack_fast(wire.TYPE_ACK, 0, self.job, 0, 0, wire.CTRL_HELLO,
                                              1, self.bit, zeros), self.links[i].address)
                next_send = now + 0.2
            if self._wait(min(0.2, deadline - now)):
                for ps, fields in self._drain(any_job=True):
                    if fields[0] != wire.TYPE_ACK or fields[5] != wire.CTRL_HELLO_REPLY:
                        continue
                    if fields[2] != self.job:
                        link = self.links[ps]
                        raise TransportError(
                            f"worker rank {self.rank}: PS {link.name} at {link.address} serves "
                            f"job {fields[2]}, but this worker's plan is for job {self.job}")
                    pending.discard(ps)

    def _drain(self, any_job: bool = False):
        """Yield (ps index, header fields) of every valid packet waiting; count the rest."""
        while True:
            try:
                length, addr = self.sock.recvfrom_into(self.buf)
            except (BlockingIOError, InterruptedError):
                return
            try:
                fields = wire.parse_header(self.buf, length, self.cfg.n)
            except wire.WireError:
                self.counters["rx_malformed"] += 1
                continue
            ps = self._ps_of(addr)
            if ps is None:
                self.counters["rx_unknown_source"] += 1
            elif fields[2] != self.job and not any_job:
                self.counters["rx_wrong_job"] += 1
            else:
                yield ps, fields

    # -- one round ---------------------------------------------------------------------------
    def exchange(self, round_: int, payloads: list[np.ndarray]) -> list[np.ndarray]:
        """Send every PS its (chunks, N) int32 shard; return the (chunks, N) RESULT words."""
        if len(payloads) != len(self.links):
            raise ValueError(f"exchange: {len(payloads)} shards for {len(self.links)} PSs")
        cfg = self.cfg
        states = []
        for link, payload in zip(self.links, payloads, strict=True):
            rows, retx = self._packets(round_, np.asarray(payload, dtype=np.int32))
            states.append(_PsRound(link, rows, retx, cfg.n, self.rto_floor(link)))
        remaining = sum(s.n_chunks for s in states)
        timers: list[tuple[float, int, int, int]] = []  # (due, ps, chunk, resends)
        c = self.counters
        while remaining:
            # read RESULTs first: after this process was descheduled they are already here,
            # and must not be mistaken for losses by the timers below
            remaining -= self._receive(states, round_)
            if not remaining:
                break
            now = time.monotonic()
            # resend what timed out
            while timers and timers[0][0] <= now:
                _, ps, chunk, tries = heapq.heappop(timers)
                st = states[ps]
                if st.done[chunk] or st.outstanding.get(chunk) != tries:
                    continue
                if chunk < st.max_done:
                    c["retx_after_later_result"] += 1
                elif chunk >= st.oldest_outstanding() + PROBES:
                    # No later chunk of this PS has completed, so the PS is most likely
                    # waiting for a slower worker, not missing ours: only the PROBES oldest
                    # chunks are resent (with backoff, counted towards max_retries).
                    heapq.heappush(timers, (now + max(self.rto, st.rto_floor), ps, chunk,
                                            tries))
                    c["retx_deferred"] += 1
                    continue
                if tries >= cfg.max_retries:
                    raise PsUnreachable(
                        f"worker rank {self.rank}: PS {st.link.name} at {st.link.address} did "
                        f"not answer chunk {chunk} of round {round_} after {tries} "
                        f"retransmissions (job {self.job})")
                self._send(st.retx_rows[chunk].data, st.link.address)
                st.pacer.take(self.frame, now)
                c["retx_sent"] += 1
                st.sent_at[chunk] = now
                st.outstanding[chunk] = tries + 1
                backoff = min(cfg.max_timeout_s, max(self.rto, st.rto_floor) * 2 ** (tries + 1))
                heapq.heappush(timers, (now + backoff, ps, chunk, tries + 1))
            # new chunks, within window and pace
            wake = timers[0][0] - now if timers else cfg.max_timeout_s
            for ps, st in enumerate(states):
                while st.next_new < st.n_chunks and len(st.outstanding) < cfg.window:
                    delay = st.pacer.delay(self.frame, now)
                    if delay > 0:
                        wake = min(wake, delay)
                        c["pacing_waits"] += 1
                        break
                    chunk = st.next_new
                    st.next_new += 1
                    self._send(st.rows[chunk].data, st.link.address)
                    st.pacer.take(self.frame, now)
                    c["grad_sent"] += 1
                    st.outstanding[chunk] = 0
                    st.sent_at[chunk] = now
                    heapq.heappush(timers, (now + max(self.rto, st.rto_floor), ps, chunk, 0))
            self._wait(wake)
        c["rounds"] += 1
        return [st.results for st in states]

    def _receive(self, states: list[_PsRound], round_: int) -> int:
        """Handle every packet waiting; return how many chunks got their RESULT."""
        c, n, got = self.counters, self.cfg.n, 0
        for ps, f in self._drain():
            st = states[ps]
            if f[0] == wire.TYPE_RESULT:
                if f[3] != round_:
                    c["result_stale_round"] += 1
                elif f[4] >= st.n_chunks:
                    c["result_bad_chunk"] += 1
                elif st.done[f[4]]:
                    c["result_duplicate"] += 1
                else:
                    st.results[f[4]] = wire.payload_view(self.buf, n)
                    st.done[f[4]] = True
                    st.max_done = max(st.max_done, f[4])
                    if st.outstanding.pop(f[4], 1) == 0 and not f[1] & wire.FLAG_RETX:
                        self._rtt_sample(time.monotonic() - st.sent_at[f[4]])
                    got += 1
                    c["result_received"] += 1
            elif f[0] == wire.TYPE_ACK and f[5] == wire.CTRL_OVERFLOW_NACK:
                chunk = f[4]
                if f[3] == round_ and chunk < st.n_chunks and not st.done[chunk]:
                    self._send(st.retx_rows[chunk].data, st.link.address)
                    c["overflow_resent"] += 1
                else:
                    c["overflow_nack_stale"] += 1
            elif f[0] == wire.TYPE_ACK:
                c["rx_control_ignored"] += 1
            else:
                c["rx_unexpected_grad"] += 1
        return got

    def bytes_per_packet(self) -> int:
        """Frame bytes of one INA packet on the wire (for rate reports)."""
        return self.frame

    def close(self) -> None:
        self.sock.close()
