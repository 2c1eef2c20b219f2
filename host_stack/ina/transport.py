"""The worker side of the INA transport: reliable, paced, windowed exchange of one round.

For every PS the worker sends the round's GRAD chunks (chunk index within that PS's shard,
slot = chunk mod pool size, bitmap = its rank bit, count 1), keeps at most ``window`` chunks
outstanding per PS (INITIAL_WINDOW until the PS's first RESULT of the round), paces each
PS's stream to its target rate (here, or with ``pacing="kernel"`` the host's egress queue
does: emulation/network/host_pacing.py), and waits for the RESULT of every chunk.  Everything moves
in batches: new chunks, resends and RESULTs are numpy arrays handed to one sendmmsg/recvmmsg
(host_stack/ina/batchio.py), and per-chunk state (send time, deadline, resends) is arrays,
so no Python runs per packet.

Loss recovery costs what is lost, not the round (SwitchML's and ATP's per-slot recovery;
RACK-TLP, RFC 8985, for telling loss from reordering).  Workers send each PS's chunks in
order and the PS completes them in order, so a chunk still without RESULT when a higher one
completed was lost (a GRAD, anybody's, or its RESULT) or reordered: it is resent alone, with
the RETX flag, once a reordering window has passed since (host_stack/ina/reorder.py: a time,
learned from the resends that turned out spurious, not a count of later chunks, which took
every packet held back 2 ms for a loss) and, while the PS owes later chunks, it has answered
one after that window: a silent PS was descheduled, not losing (``_answer_gated``).  The
tail, which no higher chunk can pass, is probed when the stream stalls (``_stall``).  A
resend is timed by the SRTT, not the RTO (its answer waits for no slower worker), or, once
the whole shard was sent, by the least RTT when that is shorter; doubling after the fourth;
nothing else slows down, there is no window to collapse.  A chunk nothing passed is resent
with RETX when its RTO expires (capped at ``max_timeout_s``, or at twice ``rto_floor``
towards a PS paced so slowly that its window takes longer); after ``max_retries`` resends
the round fails with PsUnreachable naming the PS: never a hang.  A timed-out chunk above the
PROBES oldest outstanding ones, with no later chunk completed, is most likely waiting for a
slower worker, not lost: its timer is rearmed instead.

Timeouts (host_stack/ina/rto.py): RFC 6298 over measured RTTs, with Karn's rule made exact
by the PS: a RESULT without RETX says no retransmission went into the sum, so its timing
belongs to the original sends, ours included, and is a sample even for a chunk we resent;
such a resend was spurious, and the timeout grows as RFC 4015's Eifel response says.
Two estimators per transport: chunks sent before a round's first RESULT from a PS also wait
for every other worker to start the round (their gradients are computed at different times
on a busy host), so they get the larger of the round-start RTO and the steady one.  Towards
a paced PS the timeout is never below the time the window takes at the paced rate
(``rto_floor``).

Spurious retransmissions: a RETX of chunk c by this worker is *spurious* when the PS shows
that the original contribution it repeats had arrived: (a) the chunk's first RESULT comes
without RETX, i.e. no retransmission went into the sum, or (b) a second RESULT for c arrives
while the round is on, i.e. the PS answered our RETX after c had completed without it, or
answered our original after our resend had completed it (that answer comes without RETX: the
original was reordered, not lost).  (a), and (b) without RETX, widen the reordering window
when the reordering rule sent the resend; the Eifel response (above) when a timer did.  Per
round ``retx_sent - retx_spurious`` are the real losses (of a GRAD or of its RESULT) or
resends the PS could not tell apart: a RESULT with RETX where another worker's resend was
needed and ours was not, or, through a switch, a resend that reached the PS while the
original still waited in the switch's slot.  A RESULT the network duplicated looks like (b);
at most one spurious count per resend is taken.

RESULTs are matched to a PS by their source address (through a switch, the multicast copy
keeps the PS as source).  Everything unexpected is counted and dropped, never raised.
"""

from __future__ import annotations

import socket
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from host_stack.ina import wire
from host_stack.ina.addresses import Address
from host_stack.ina.batchio import BatchSocket, ipv4, make_socket
from host_stack.ina.impair import ImpairedSocket
from host_stack.ina.native import _batchio
from host_stack.ina.pacing import FRAME_OVERHEAD, Pacer
from host_stack.ina.reorder import ReorderWindow
from host_stack.ina.rto import CLOCK_GRANULARITY, RtoEstimator

__all__ = ["PACING_MODES", "PsLink", "PsUnreachable", "TransportConfig", "TransportError",
           "WorkerTransport", "auto_window", "make_socket"]

PROBES = 4  # oldest outstanding chunks per PS that may be resent while no later one completed
RETX_MIN_TIMEOUT = 2 * CLOCK_GRANULARITY  # least timeout of a resend (its answer needs no
# slower worker: every worker had passed the chunk when it was found lost)
STEADY_RESENDS = 4  # resends of a chunk an SRTT apart before the timeout doubles
TAIL_RESEND_RTTS = 2  # least RTTs a resend waits once the whole shard was sent (_retx_timeout)
# chunks outstanding per PS before the round's first RESULT from it (TCP's initial window):
# sent in one burst before any answer, they all wait for the slowest worker to start and queue
# behind each other, so they time only the round-start estimator and leave the least RTT at
# the burst's length; a whole shard sent so (a window as large as it) left the steady
# estimator without a sample all round, and loss recovery at the tail waited 11-17 ms "least
# RTTs" per resend (fig1, 100k values, 5% loss, duplication and reordering: 2x longer rounds)
INITIAL_WINDOW = 1024
_ROUND_AT = wire.HEADER_DTYPE.fields["round"][1]
ROUND_BYTES = slice(_ROUND_AT, _ROUND_AT + 4)  # a GRAD row's round field (big-endian u32)
PS_QUEUE_BYTES = 8 * 1024 * 1024  # bytes of large datagrams all windows keep at a PS
MTU_PAYLOAD = 1472  # UDP payload of a 1500-byte frame (1500 - IPv4 20 - UDP 8)
PS_QUEUE = 32768  # datagrams a PS socket queues (2 x SOCKET_BUFFER at ~1 KiB each, no GRO)
# "user": a token bucket per PS stream here (host_stack/ina/pacing.py); "kernel": the host's
# egress queue paces each stream (emulation/network/host_pacing.py), so the window goes out at once
# and a descheduled worker loses no sending time
PACING_MODES = ("user", "kernel")


class TransportError(RuntimeError):
    """The transport could not finish a round."""


class PsUnreachable(TransportError):
    """A PS did not answer within the retry budget."""


@dataclass(frozen=True)
class TransportConfig:
    """Knobs of the reliable transport; defaults suit loopback and small emulated networks."""

    n: int = wire.DEFAULT_N
    window: int = 1024  # per PS; jobs take auto_window(workers, pool_size)
    gso: str = "loopback"  # where sends use UDP GSO (batchio.BatchSocket)
    timeout_s: float = 0.2  # first retransmission timeout, before any RTT sample
    min_timeout_s: float = 0.02
    max_timeout_s: float = 1.0
    max_retries: int = 30
    pool_size: int = 4096
    hello_timeout_s: float = 30.0
    pacing: str = "user"  # who holds each PS stream to its rate (PACING_MODES)

    def __post_init__(self) -> None:
        if self.window < 1 or self.pool_size < 1 or self.max_retries < 0:
            raise ValueError("transport: window and pool_size must be >= 1, max_retries >= 0")
        if self.pacing not in PACING_MODES:
            raise ValueError(f"transport: pacing {self.pacing!r}: expected one of "
                             f"{', '.join(PACING_MODES)}")
        if not 0 < self.min_timeout_s <= self.timeout_s <= self.max_timeout_s:
            raise ValueError("transport: expected 0 < min_timeout_s <= timeout_s <= "
                             "max_timeout_s")


def auto_window(workers: int, pool_size: int = TransportConfig.pool_size,
                n: int = wire.DEFAULT_N) -> int:
    """Outstanding chunks per PS for a job of ``workers`` (when ``--window`` is not given):
    as many as every worker's window fits in the PS's receive buffer (batchio.SOCKET_BUFFER,
    about PS_QUEUE datagrams, where an overflow is a loss), and no more than the job's slot
    pool, so that one stream's outstanding chunks never share a switch slot, and no more
    than PS_QUEUE_BYTES from all workers (on loopback, 64 KB datagrams: 24 chunks each of
    6 workers lost none, 32 lost a few per 25 MB); never below 32 full frames' worth.

    Large, because the window is what absorbs the time a chunk waits for the slowest worker
    and for a descheduled process on a loaded host: on fig1 with 1M values (6 workers,
    2 cores) 2730 chunks instead of 1024 made unimpaired rounds about 10% shorter, and with
    5% of packets held back 2 ms (every held chunk keeps its place in the window that much
    longer) the rounds' ratio to unimpaired ones went from 1.25-1.34 to 1.15-1.23, and
    with the PS's queue doubled (batchio.SOCKET_BUFFER) 4096 chunks (the pool) instead of
    2730 took it from 1.15 to 1.11 (10 interleaved pairs of runs; docs/performance.md).
    And because each batch of RESULTs costs the worker and the PS a
    fixed amount of Python whatever its size: a window of 64 took 5x the CPU per round of a
    window of 1024.
    """
    workers, size = max(1, workers), wire.packet_len(n)
    least = max(1, min(32, 32 * MTU_PAYLOAD // size))  # 32 full frames' worth of bytes
    return max(least, min(PS_QUEUE // workers, PS_QUEUE_BYTES // (workers * size), pool_size))


@dataclass(frozen=True)
class PsLink:
    """One PS as the worker sees it."""

    name: str
    address: Address
    rate_bps: float | None


class _PsRound:
    """Send state of one round towards one PS: one entry per chunk in each array."""

    def __init__(self, link: PsLink, rows: np.ndarray, results: np.ndarray, rto_floor: float,
                 user_paced: bool = True) -> None:
        self.link = link
        self.ip = np.array([ipv4(link.address[0])], dtype=np.uint32)
        self.port = np.array([link.address[1]], dtype=np.uint16)
        self.rto_floor = rto_floor
        self.rows = rows
        self.n_chunks = rows.shape[0]
        self.next_new = 0
        self.n_done = 0
        self.low = 0  # lowest chunk without a RESULT
        self.max_done = -1  # highest chunk with a RESULT
        self.started: float | None = None  # first send of the round
        self.first_result = False  # a RESULT of this round came back
        self.last_done: float | None = None  # when a RESULT last completed a chunk
        self.max_gap = 0.0  # longest wait between two RESULTs that completed chunks
        self.probed = -np.inf  # when the tail was last probed
        # when _resend has something to do at the earliest: kept by the last scan and
        # brought forward by what could make something due sooner (chunks sent, chunks
        # passed, an answer that may release gated ones), not rescanned on every RESULT:
        # under reordering half the wakes bring only held RESULTs, and a scan of the
        # window costs as much as a small batch
        self.next_check = -np.inf
        self.gated_due = np.inf  # the least reordering deadline among gated chunks
        self.scan_window = 0.0  # the reordering window of the last scan
        self.done = np.zeros(self.n_chunks, dtype=bool)
        self.sent_at = np.zeros(self.n_chunks, dtype=np.float64)  # first send
        self.last_tx = np.zeros(self.n_chunks, dtype=np.float64)  # latest send, resends too
        self.deadline = np.full(self.n_chunks, np.inf)
        self.passed_at = np.full(self.n_chunks, np.inf)  # a higher chunk completed first
        self.resends = np.zeros(self.n_chunks, dtype=np.int32)
        self.fast = np.zeros(self.n_chunks, dtype=bool)  # first resend by the reordering rule
        self.spurious = np.zeros(self.n_chunks, dtype=np.int32)
        self.at_start = np.zeros(self.n_chunks, dtype=bool)  # sent before the first RESULT
        self.results = results  # (chunks, N) int32, filled as RESULTs come
        # what _batchio.results reads and fills, in its order
        self.arrays = (self.done, self.results, self.deadline, self.resends, self.sent_at,
                       self.at_start)
        self.pacer = Pacer(link.rate_bps if user_paced else None)
        # paced by the kernel: when its queue for this stream drains (departures() below)
        self.kernel_rate = None if user_paced or link.rate_bps is None else link.rate_bps / 8
        self.queue_end = 0.0

    def outstanding(self) -> int:
        return self.next_new - self.n_done

    def resend_rows(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, index) for ``_send`` of chunks ``idx`` again, with the RETX flag: copies of
        only those rows (a resend is rare; a RETX twin of every row cost a copy of the
        whole shard per round)."""
        rows = self.rows[idx]
        rows[:, 1] |= wire.FLAG_RETX
        return rows, np.arange(idx.size)

    def departures(self, now: float, count: int, frame: int) -> np.ndarray | float:
        """When ``count`` frames handed over now leave: now, or, where the host's egress
        queue paces this stream, one frame time apart after what it still holds.  Timers
        and RTT samples start there: a window handed to the kernel at once leaves over the
        window's time at the stream's rate, and timing it from the hand-over fired spurious
        resends (150 in 4 rounds on fig1 under load)."""
        if self.kernel_rate is None:
            return now
        gap = frame / self.kernel_rate
        out = max(now, self.queue_end) + gap * np.arange(1, count + 1)
        self.queue_end = float(out[-1])
        return out

    def oldest_outstanding(self) -> int:
        self.low = _batchio.pass_over(self.done, self.passed_at, self.low, 0, 0.0)[0]
        return self.low


class WorkerTransport:
    """Exchanges quantized gradient shards for RESULT payloads, one round at a time."""

    def __init__(self, sock: socket.socket | ImpairedSocket, job: int, rank: int,
                 links: list[PsLink], config: TransportConfig | None = None,
                 group: socket.socket | None = None) -> None:
        self.cfg = config or TransportConfig()
        # ``group``: the job's RESULT group on loopback, received beside ``sock``
        # (host_stack/ina/result_group.py)
        self.io = BatchSocket(sock, wire.packet_len(self.cfg.n), gso=self.cfg.gso, also=group)
        self.job = job
        self.rank = rank
        self.bit = wire.rank_bit(rank)
        self.links = links
        self.ps_ips = np.array([ipv4(link.address[0]) for link in links], dtype=np.uint32)
        self.ps_ports = np.array([link.address[1] for link in links], dtype=np.uint16)
        self.ps_keys = (self.ps_ips.astype(np.uint64) << 16) | self.ps_ports
        self.counters: Counter[str] = Counter()
        self.frame = wire.packet_len(self.cfg.n) + FRAME_OVERHEAD
        cfg = self.cfg
        self.rtt = RtoEstimator(cfg.timeout_s, cfg.min_timeout_s, cfg.max_timeout_s)
        self.start_rtt = RtoEstimator(cfg.timeout_s, cfg.min_timeout_s, cfg.max_timeout_s)
        self.reorder = ReorderWindow()
        self.slow = np.zeros(self.io.data.shape[0], dtype=np.uint8)  # rows left to _results
        self.stats = np.zeros((len(links), _batchio.N_RESULT_STATS))
        self._rows = [np.zeros((0, wire.packet_len(self.cfg.n)), np.uint8) for _ in links]

    @property
    def sock(self) -> socket.socket | ImpairedSocket:
        """The socket underneath (tests look at an ImpairedSocket's counts)."""
        return self.io.sock

    @property
    def rto(self) -> float:
        """Current steady-state retransmission timeout in seconds."""
        return self.rtt.rto

    def rto_floor(self, link: PsLink) -> float:
        """The least timeout towards a paced PS: the time its window takes at the paced rate.

        Where the plan loads a link to 100%, the queue there can hold every stream's window
        (emulation/network/mininet_net.py sizes it so), and draining it takes about window x
        frame / rate for a stream of that rate: a RESULT that late is queued, not lost.  The RTT
        samples do not see this coming (they include waiting for the slowest worker, which swings as
        workers get the CPU), and every spurious timeout of an aggregated chunk is resent by
        each worker, unaggregated, into that same full link.  Not capped at ``max_timeout_s``:
        at a few kbit/s a window takes seconds, and a 1 s cap made 50 workers x 4 PSs resend
        their probes every second into links that carry ten frames a second (fattree:6 at 1%
        of the paper's traffic, CNN workers: with the cap a worker gave up in round 0 after 30
        resends; without it the same run finished its 3 rounds).
        """
        if link.rate_bps is None:
            return 0.0
        return self.cfg.window * self.frame * 8 / link.rate_bps

    def _timeout(self, st: _PsRound) -> float:
        """Timeout of a chunk sent to ``st``'s PS now (before any backoff)."""
        rto = self.rtt.rto if st.first_result else max(self.rtt.rto, self.start_rtt.rto)
        return max(rto, st.rto_floor)

    def _stall(self, st: _PsRound) -> float:
        """How long a stream that sent everything may go without completing a chunk before
        its lowest unanswered chunks above the highest completed one are taken for lost (the
        tail, which no higher chunk can pass): twice the reordering window, and twice the
        longest wait between completions this round (a paced stream's RESULTs come that far
        apart), at least two SRTTs (RACK-TLP's probe timeout: with one, a PS descheduled
        that long on a loaded host was probed every few rounds) and, towards a paced PS, the
        floor of every timeout there (``rto_floor``)."""
        srtt = self.rtt.srtt or self.start_rtt.srtt or 0.0
        return max(RETX_MIN_TIMEOUT, 2 * srtt, 2 * self.reorder.value(self.rtt.srtt),
                   2 * st.max_gap, st.rto_floor)

    def _retx_timeout(self, st: _PsRound, resends: np.ndarray) -> np.ndarray:
        """Timeouts of chunks resent now, ``resends`` times so far (this one included).

        A resend waits for no slower worker (all had passed the chunk when it was found
        lost), so its answer comes about an SRTT later, not an RTO: SRTT, at least
        ``RETX_MIN_TIMEOUT`` and the paced floor, for ``STEADY_RESENDS`` resends (at 5% loss
        each way about one recovery in a thousand needs a fourth, a few per round on fig1,
        and doubling from the third made those the round's tail), then doubled per resend,
        capped at ``max_timeout_s`` (or twice the floor towards a slowly paced PS).  Not an
        estimator of the resends' own answers: those wait for the other workers' resends of a
        chunk that needed theirs, and feeding that back raised the timeout to its cap at 5%
        loss.

        Once the whole shard has gone to the PS, its queue from this worker only drains and
        the round waits for what is still missing: a resend is then answered about as soon
        as the fastest chunk ever was (the least RTT, every contribution at hand), and waits
        ``TAIL_RESEND_RTTS`` of those if that is less than the SRTT, which includes queueing
        behind a whole window (fig1 at 100k values under 5% loss, duplication and
        reordering: SRTT 13 ms, least RTT 3 ms; the round's last chunk had needed 3-4
        resends an SRTT apart).
        """
        srtt = self.rtt.srtt or self.start_rtt.srtt or self._timeout(st)
        if self.reorder.min_rtt is not None and st.next_new == st.n_chunks:
            srtt = min(srtt, TAIL_RESEND_RTTS * self.reorder.min_rtt)
        base = max(RETX_MIN_TIMEOUT, srtt, st.rto_floor)
        cap = max(self.cfg.max_timeout_s, 2 * st.rto_floor)
        return np.minimum(cap, base * 2.0 ** np.maximum(0, resends - STEADY_RESENDS))

    # -- I/O helpers -------------------------------------------------------------------------
    def _wait(self, timeout: float) -> bool:
        return self.io.wait(timeout)

    def _send(self, st: _PsRound, rows: np.ndarray, idx: np.ndarray) -> int:
        """Send rows[idx] to st's PS; how many went (the rest: send buffer full)."""
        res = self.io.send(rows, idx, st.ip, st.port)
        if res.errors:
            self.counters["send_error"] += res.errors
            self.counters[f"send_error_{res.last_errno}"] += res.errors
        if res.done < len(idx):
            self.counters["send_buffer_full"] += 1  # the rest goes on the next turn
        return res.done

    def _send_one(self, data: bytes, addr: Address) -> None:
        try:
            self.io.sendto(data, addr)
        except BlockingIOError:
            self.counters["send_buffer_full"] += 1
        except OSError as exc:
            self.counters["send_error"] += 1
            self.counters[f"send_error_{exc.errno}"] += 1

    def grad_rows(self, ps: int, round_: int, chunks: int) -> np.ndarray:
        """Rows of a round's ``chunks`` GRAD packets to PS number ``ps``, headers written,
        payloads the caller's to fill (``_batchio.fill``).  The buffer is kept from round to
        round (only the round field changes): a fresh one per round cost page faults on
        every byte of the shard."""
        rows = self._rows[ps]
        if rows.shape[0] < chunks:
            ids = np.arange(chunks, dtype=np.uint32)
            hdrs = wire.headers(chunks, wire.TYPE_GRAD, self.job, 0, ids,
                                ids % self.cfg.pool_size, self.bit)
            rows = self._rows[ps] = wire.pack_batch(hdrs, np.zeros((chunks, self.cfg.n),
                                                                    np.int32), n=self.cfg.n)
        rows = rows[:chunks]
        rows[:, ROUND_BYTES] = np.frombuffer(round_.to_bytes(4, "big"), dtype=np.uint8)
        return rows

    def _receive_batches(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Yield ``_classify`` of each receive until nothing is waiting."""
        io = self.io
        while k := io.recv():
            yield self._classify(io.data[:k], io.lens[:k], io.ips[:k], io.ports[:k])

    def _classify(self, rows: np.ndarray, lens: np.ndarray, ips: np.ndarray,
                  ports: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(records, PS index per packet or -1, valid mask) of received packets; malformed
        packets and unknown sources are counted here."""
        k = rows.shape[0]
        recs, ok = wire.parse_batch(rows, lens, self.cfg.n)
        if not ok.all():
            self.counters["rx_malformed"] += int(k - ok.sum())
        ps = np.full(k, -1, dtype=np.int64)
        keys = (ips.astype(np.uint64) << 16) | ports
        for i in range(len(self.links) - 1, -1, -1):  # exact (host, port) first ...
            ps[keys == self.ps_keys[i]] = i
        unknown = ps < 0
        if unknown.any():
            for i in range(len(self.links) - 1, -1, -1):  # ... else the first PS there
                ps[unknown & (ips == self.ps_ips[i])] = i
            unknown = ps < 0
            self.counters["rx_unknown_source"] += int((ok & unknown).sum())
            ok = ok & ~unknown
        return recs, ps, ok

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
                    self._send_one(wire.pack_fast(wire.TYPE_ACK, 0, self.job, 0, 0,
                                                  wire.CTRL_HELLO, 1, self.bit, zeros),
                                   self.links[i].address)
                next_send = now + 0.2
            if not self._wait(min(0.2, deadline - now)):
                continue
            for recs, ps, ok in self._receive_batches():
                hdr = recs["hdr"]
                replies = ok & (hdr["type"] == wire.TYPE_ACK) & (
                    hdr["slot"] == wire.CTRL_HELLO_REPLY)
                for i in np.flatnonzero(replies):
                    if hdr["job"][i] != self.job:
                        link = self.links[ps[i]]
                        raise TransportError(
                            f"worker rank {self.rank}: PS {link.name} at {link.address} serves "
                            f"job {hdr['job'][i]}, but this worker's plan is for job {self.job}")
                    pending.discard(int(ps[i]))

    # -- one round ---------------------------------------------------------------------------
    def exchange(self, round_: int, payloads: list[np.ndarray]) -> list[np.ndarray]:
        """Send every PS its (chunks, N) int32 shard; return the (chunks, N) RESULT words."""
        if len(payloads) != len(self.links):
            raise ValueError(f"exchange: {len(payloads)} shards for {len(self.links)} PSs")
        rows, results = [], []
        for ps, payload in enumerate(payloads):
            payload = np.ascontiguousarray(payload, dtype=np.int32)
            if payload.ndim != 2 or payload.shape[1] != self.cfg.n:
                raise ValueError(f"exchange: shard of shape {payload.shape}: expected "
                                 f"(chunks, {self.cfg.n})")
            r = self.grad_rows(ps, round_, payload.shape[0])
            _batchio.fill(r, r.shape[1], r.shape[0], payload, 0, 0, payload.size, 0)
            rows.append(r)
            results.append(np.empty(payload.shape, np.int32))
        self.exchange_rows(round_, rows, results)
        return results

    def exchange_rows(self, round_: int, rows: list[np.ndarray],
                      results: list[np.ndarray]) -> None:
        """One round: every PS's GRAD rows (``grad_rows``, payloads filled) out, the RESULT
        words of every chunk into ``results`` (one (chunks, N) int32 array per PS)."""
        states = [_PsRound(link, r, out, self.rto_floor(link), self.cfg.pacing == "user")
                  for link, r, out in zip(self.links, rows, results, strict=True)]
        remaining = sum(s.n_chunks for s in states)
        while remaining:
            # read RESULTs first: after this process was descheduled they are already here,
            # and must not be mistaken for losses by the timers below
            remaining -= self._receive(states, round_)
            if not remaining:
                break
            now = time.monotonic()
            wake = self.cfg.max_timeout_s
            for st in states:
                wake = min(wake, self._resend(st, round_, now), self._send_new(st, now))
            self._wait(wake)
        self.counters["rounds"] += 1
        self.reorder.end_round()

    def _send_new(self, st: _PsRound, now: float) -> float:
        """Send the next chunks the window and the pacer allow; seconds until more may go."""
        # before the PS's first RESULT of the round at most INITIAL_WINDOW chunks: those
        # wait for every worker to start and time only the round-start estimator
        window = self.cfg.window if st.first_result else min(self.cfg.window, INITIAL_WINDOW)
        room = min(window - st.outstanding(), st.n_chunks - st.next_new)
        if room <= 0:
            return self.cfg.max_timeout_s
        allowed = min(room, st.pacer.budget(self.frame, now))
        if allowed <= 0:
            self.counters["pacing_waits"] += 1
            return st.pacer.delay(self.frame, now)
        first = st.next_new
        sent = self._send(st, st.rows, np.arange(first, first + allowed))
        if not sent:
            return 0.001
        if st.started is None:
            st.started = now
        new = slice(first, first + sent)
        left = st.departures(now, sent, self.frame)
        st.sent_at[new] = left
        st.last_tx[new] = left
        st.deadline[new] = left + self._timeout(st)
        st.at_start[new] = not st.first_result
        st.next_new += sent
        st.next_check = min(st.next_check, float(st.deadline[first]))
        st.pacer.take(self.frame * sent, now)
        self.counters["grad_sent"] += sent
        return 0.0 if sent < allowed else self.cfg.max_timeout_s

    def _resend(self, st: _PsRound, round_: int, now: float) -> float:
        """Resend what is lost or timed out; seconds until the next deadline."""
        if now < st.next_check and self.reorder.value(self.rtt.srtt) >= st.scan_window:
            return st.next_check - now
        wake = self._scan(st, round_, now)
        st.next_check = now + wake
        return wake

    def _scan(self, st: _PsRound, round_: int, now: float) -> float:
        lo, hi = st.oldest_outstanding(), st.next_new
        if lo >= hi:
            return self.cfg.max_timeout_s
        chunks = np.arange(lo, hi)
        waiting = ~st.done[lo:hi]
        tail = np.flatnonzero(waiting & (chunks > st.max_done) & (st.resends[lo:hi] == 0))
        stall_end = np.inf
        if hi == st.n_chunks and st.last_done is not None and tail.size:
            # one probe of the PROBES lowest per stall: a tail that waits for a slow worker
            # is not resent whole
            stall_end = max(st.last_done, st.probed) + self._stall(st)
            if now >= stall_end:  # a tail loss probe: passed over when the stream stalled
                probe = tail[:PROBES] + lo
                st.passed_at[probe] = np.minimum(st.passed_at[probe], st.last_done)
                self.counters["retx_probe"] += probe.size
                st.probed = now
                stall_end = np.inf
        # RACK: passed over by a higher chunk a reordering window ago, never resent yet, and
        # where the PS still owes later chunks, it answered one since (_answer_gated)
        fresh = waiting & (st.resends[lo:hi] == 0)
        passed = np.where(fresh, st.passed_at[lo:hi], np.inf)
        st.scan_window = self.reorder.value(self.rtt.srtt)
        expired = passed + st.scan_window
        gated = self._answer_gated(st, fresh, chunks, now)
        lost = expired <= np.where(gated, st.last_done or -np.inf, now)
        due = waiting & (st.deadline[lo:hi] <= now)
        c = self.counters
        if due.any() or lost.any():
            # no later chunk completed: the PS most likely waits for a slower worker, not for
            # ours; only the PROBES oldest chunks are resent, the others' timers rearmed
            defer = due & ~lost & (chunks >= st.max_done) & (chunks >= lo + PROBES)
            if defer.any():
                st.deadline[lo:hi][defer] = now + self._timeout(st)
                c["retx_deferred"] += int(defer.sum())
            go = np.flatnonzero((due & ~defer) | lost) + lo
            over = go[st.resends[go] >= self.cfg.max_retries]
            if over.size:
                raise PsUnreachable(
                    f"worker rank {self.rank}: PS {st.link.name} at {st.link.address} did not "
                    f"answer chunk {over[0]} of round {round_} after {st.resends[over[0]]} "
                    f"retransmissions (job {self.job})")
            sent = go[:self._send(st, *st.resend_rows(go))]
            if go.size and not sent.size:
                return 0.001  # send buffer full: try again shortly, do not spin
            if sent.size:
                fast = lost[sent - lo]
                c["retx_fast"] += int(fast.sum())
                c["retx_timeout"] += int(sent.size - fast.sum())
                c["retx_sent"] += sent.size
                st.fast[sent[fast]] = True
                st.resends[sent] += 1
                left = st.departures(now, sent.size, self.frame)
                st.last_tx[sent] = left
                st.deadline[sent] = left + self._retx_timeout(st, st.resends[sent])
                st.pacer.take(self.frame * sent.size, now)
            passed[sent - lo] = np.inf
        waiting = ~st.done[lo:hi]
        pending = st.deadline[lo:hi][waiting]
        wake = float(pending.min()) if pending.size else np.inf
        # a gated chunk's window is checked when its PS's next RESULT wakes this stream, or
        # when the silence has lasted a stall
        timed = expired[~gated & (passed < np.inf)]
        wake = min(wake, float(timed.min()) if timed.size else np.inf, stall_end)
        st.gated_due = np.inf
        if gated.any():
            wake = min(wake, st.last_done + self._stall(st))
            held = expired[gated & (passed < np.inf)]
            st.gated_due = float(held.min()) if held.size else np.inf
        return min(wake - now, self.cfg.max_timeout_s)

    def _answer_gated(self, st: _PsRound, fresh: np.ndarray, chunks: np.ndarray,
                      now: float) -> np.ndarray:
        """Which chunks count as lost only once their PS answered something a reordering
        window after they were passed, not when the window has merely passed: those below
        the highest completed chunk, while the PS still owes chunks above it (sent after
        the one that passed) and has been silent for less than a stall (``_stall``).
        Silence from a PS that owes answers means it has not run (on a loaded host a
        process is descheduled for ~12 ms at a time) rather than that the chunk was lost,
        and every worker's resend of every chunk passed before such a stall is spurious
        and teaches the reordering window the stall's length.  When the PS owes nothing
        later (the round's tail), or its silence lasted a stall (what it owes may be lost
        too: the last chunk, say), the window alone decides, as RACK's."""
        if (st.last_done is None or now - st.last_done >= self._stall(st)
                or not (fresh & (chunks > st.max_done)).any()):
            return np.zeros(chunks.size, dtype=bool)
        return chunks < st.max_done

    def _receive(self, states: list[_PsRound], round_: int) -> int:
        """Handle every packet waiting; return how many chunks got their RESULT.

        The usual RESULT (this round's, new, never resent) is taken in C, a whole receive
        in one call (``_batchio.results``): under reordering the workers wake more often
        with fewer RESULTs each, and this per-wake work in numpy was what their CPU grew by.
        What remains (resent chunks, duplicates, control, other jobs) goes through
        ``_results``."""
        got = 0
        io, stats = self.io, self.stats
        arrays = tuple(st.arrays for st in states)
        while k := io.recv():
            slow = _batchio.results(io.data, io.row_len, k, io.lens, io.ips, io.ports,
                                    self.ps_ips, self.ps_ports, self.job, round_, self.cfg.n,
                                    arrays, self.slow, stats)
            now = time.monotonic()
            if slow:
                idx = np.flatnonzero(self.slow[:k])
                got += self._receive_rare(states, round_, self._classify(
                    io.data[idx], io.lens[idx], io.ips[idx], io.ports[idx]), now)
            for st, (count, top, *times) in zip(states, stats.tolist(), strict=True):
                if count:
                    got += int(count)
                    self._completed(st, now, int(count), int(top))
                    self._timed(st, now, times)
        return got

    def _receive_rare(self, states: list[_PsRound], round_: int,
                      batch: tuple[np.ndarray, np.ndarray, np.ndarray], now: float) -> int:
        """The rows _batchio.results left: counted, control, or RESULTs for _results."""
        recs, ps, ok = batch
        c = self.counters
        hdr = recs["hdr"]
        mine = hdr["job"] == self.job
        results = ok & mine & (hdr["type"] == wire.TYPE_RESULT)
        if not results.all():  # anything but RESULTs of this job: counted, or control
            c["rx_wrong_job"] += int((ok & ~mine).sum())
            for i in np.flatnonzero(ok & mine & ~results):
                self._control(states[ps[i]], round_, hdr[i])
        got = 0
        for p, st in enumerate(states):
            sel = np.flatnonzero(results & (ps == p))
            if sel.size:
                got += self._results(st, round_, wire.take(recs, sel), now)
        return got

    def _results(self, st: _PsRound, round_: int, recs: np.ndarray, now: float) -> int:
        """Take one PS's RESULTs that _batchio.results left; how many completed a chunk."""
        c = self.counters
        hdr = recs["hdr"]
        chunks = hdr["chunk"].astype(np.int64)
        if int(chunks.max()) >= st.n_chunks or not (hdr["round"] == round_).all():
            stale = hdr["round"] != round_
            bad = ~stale & (chunks >= st.n_chunks)
            c["result_stale_round"] += int(stale.sum())
            c["result_bad_chunk"] += int(bad.sum())
            keep = np.flatnonzero(~stale & ~bad)
            if not keep.size:
                return 0
            recs, chunks = wire.take(recs, keep), chunks[keep]
            hdr = recs["hdr"]
        fresh = ~st.done[chunks]
        flags = hdr["flags"]
        new, first = np.unique(chunks[fresh], return_index=True)
        rows = np.flatnonzero(fresh)[first]
        # (b) a RESULT for a chunk already done answers one of our RETX: spurious
        dup = np.ones(len(chunks), dtype=bool)
        dup[rows] = False
        c["result_duplicate"] += int(dup.sum())
        original = (flags & wire.FLAG_RETX) == 0  # the PS answered an original
        for chunk, late in zip(chunks[dup], original[dup], strict=True):
            if st.spurious[chunk] < st.resends[chunk]:
                st.spurious[chunk] += 1
                c["retx_spurious"] += 1
                if late and st.fast[chunk]:  # reordered: the original came this late
                    self.reorder.spurious(now - float(st.passed_at[chunk]))
        if not new.size:
            return 0
        payload, flags = recs["payload"][rows], flags[rows]
        st.results[new] = payload
        st.done[new] = True
        st.deadline[new] = np.inf
        self._completed(st, now, new.size, int(new.max()))
        # Karn: only RESULTs made of original sends (RETX clear) time them
        timed = new[(flags & wire.FLAG_RETX) == 0]
        # (a) no retransmission went into the sum: every RETX we sent for it was spurious
        wasted = timed[st.resends[timed] > st.spurious[timed]]
        if wasted.size:
            c["retx_spurious"] += int((st.resends[wasted] - st.spurious[wasted]).sum())
            st.spurious[wasted] = st.resends[wasted]
            reordered = wasted[st.fast[wasted]]
            if reordered.size:  # the reordering rule was fooled: widen its window
                self.reorder.spurious(now - float(st.passed_at[reordered].min()))
        at_start = st.at_start[timed]
        times = []
        for phase in (at_start, ~at_start):
            sent = st.sent_at[timed[phase]]
            times += (float(sent.min()), float(sent.max())) if sent.size else (np.inf, -np.inf)
        self._timed(st, now, times)
        for est, start in ((self.start_rtt, True), (self.rtt, False)):
            fooled = wasted[(st.at_start[wasted] == start) & ~st.fast[wasted]]
            if fooled.size:  # RFC 4015: the next timeout covers what fooled this one
                est.spurious(max(0.0, now - float(st.sent_at[fooled].min())))
        return new.size

    def _completed(self, st: _PsRound, now: float, count: int, top: int) -> None:
        """Book ``count`` chunks, up to ``top``, that just got their RESULT (already marked
        done, their payload stored): the chunks below ``top`` still waiting were passed over
        (RACK), and the stream may have something to resend sooner."""
        st.n_done += count
        if st.last_done is not None:
            st.max_gap = max(st.max_gap, now - st.last_done)
        st.last_done = now
        # what is left below the highest completed chunk was passed over now (RACK)
        st.low, passed = _batchio.pass_over(st.done, st.passed_at, st.low, top, now)
        if passed:
            st.next_check = min(st.next_check, now + self.reorder.value(self.rtt.srtt))
        # an answer may release gated chunks: at once, or when their window is over; once
        # all was sent, the tail is probed a stall after the last answer
        st.next_check = min(st.next_check, max(now, st.gated_due))
        if st.next_new == st.n_chunks:
            st.next_check = min(st.next_check, now + self._stall(st))
        st.max_done = max(st.max_done, top)
        self.counters["result_received"] += count

    def _timed(self, st: _PsRound, now: float, times: list[float]) -> None:
        """RTT samples from chunks just completed by original sends only (Karn): ``times``
        is the least and greatest send time of those sent before the PS's first RESULT of
        the round (the round-start estimator's), then of the others (+-inf where none)."""
        for est, first, last in ((self.start_rtt, times[0], times[1]),
                                 (self.rtt, times[2], times[3])):
            if first <= last:
                # max(0, ...): a kernel-paced frame's departure is an estimate
                est.observe(max(0.0, now - first), now)
                self.reorder.observe_rtt(max(0.0, now - last))
        st.first_result = True

    def _control(self, st: _PsRound, round_: int, hdr: np.void) -> None:
        """One non-RESULT packet of this job: an OVERFLOW NACK is resent, the rest counted."""
        c = self.counters
        if hdr["type"] == wire.TYPE_ACK and hdr["slot"] == wire.CTRL_OVERFLOW_NACK:
            chunk = int(hdr["chunk"])
            if hdr["round"] == round_ and chunk < st.n_chunks and not st.done[chunk]:
                self._send(st, *st.resend_rows(np.array([chunk])))
                c["overflow_resent"] += 1
            else:
                c["overflow_nack_stale"] += 1
        elif hdr["type"] == wire.TYPE_ACK:
            c["rx_control_ignored"] += 1
        else:
            c["rx_unexpected_grad"] += 1

    def bytes_per_packet(self) -> int:
        """Frame bytes of one INA packet on the wire (for rate reports)."""
        return self.frame

    def close(self) -> None:
        self.io.close()
