"""Exactly-once aggregation and failure handling of the INA transport, PS and worker side.

Everything runs in this process (PS and workers as threads over real loopback UDP sockets);
loss, duplication and reordering are injected at the sockets by host_stack.ina.impair.
"""

import contextlib
import dataclasses
import socket
import threading
import time

import numpy as np
import pytest

from host_stack.ina import wire
from host_stack.ina.addresses import loopback
from host_stack.ina.aggregator import ChunkAggregator
from host_stack.ina.impair import Impairment, wrap
from host_stack.ina.jobplan import job_plan, star_plan
from host_stack.ina.pacing import Pacer
from host_stack.ina.ps_apply import SumApply
from host_stack.ina.ps_server import PsServer
from host_stack.ina.result_group import join, pick_group, send_on_loopback
from host_stack.ina.transport import (
    PsLink,
    PsUnreachable,
    TransportConfig,
    TransportError,
    WorkerTransport,
    make_socket,
)

N = 32


class Cluster:
    """PS threads in sum mode plus worker transports for one star plan."""

    def __init__(self, workers, shares, n_chunks, impairment=None, job=1, config=None,
                 group=None):
        self.plan = job_plan(star_plan(workers, shares, job=job))
        self.addr = loopback(self.plan.ps_ids + self.plan.worker_ids)
        self.ranges = self.plan.chunk_ranges(n_chunks * N, N)
        self.imp = impairment
        self.group = group  # PSs multicast RESULTs there, workers join it
        self.servers = []
        for i, ps in enumerate(self.plan.ps_ids):
            a, b = self.ranges[ps]
            agg = ChunkAggregator(b - a, N, workers, SumApply())
            raw = make_socket(self.addr[ps])
            if group:
                send_on_loopback(raw)
            self.servers.append(PsServer(wrap(raw, self._imp(100 + i)), job, N, agg,
                                         [self.addr[w] for w in self.plan.worker_ids],
                                         [group] if group else None))
        self.threads = [threading.Thread(target=s.serve, kwargs={"idle_exit_s": 60},
                                         daemon=True) for s in self.servers]
        for t in self.threads:
            t.start()
        self.config = config or TransportConfig(n=N)

    def _imp(self, seed):
        if self.imp is None:
            return None
        return Impairment(self.imp.loss, self.imp.dup, self.imp.reorder, self.imp.delay_s, seed)

    def transport(self, rank):
        w = self.plan.worker_ids[rank]
        links = [PsLink(ps, self.addr[ps], None) for ps in self.plan.ps_ids]
        sock = wrap(make_socket(self.addr[w]), self._imp(rank))
        return WorkerTransport(sock, self.plan.job, rank, links, self.config,
                               join(self.group) if self.group else None)

    def split(self, data):
        return [data[a:b] for a, b in (self.ranges[p] for p in self.plan.ps_ids)]

    def close(self):
        for s in self.servers:
            s.stop = True
        for t in self.threads:
            t.join(timeout=5)
        for s in self.servers:
            s.sock.close()


def run_rounds(cluster, data):
    """data: (rounds, workers, chunks, N) int32; returns {rank: [per-round sums]}."""
    out, errors = {}, []

    def work(rank):
        try:
            tr = cluster.transport(rank)
            tr.hello()
            out[rank] = ([np.concatenate(tr.exchange(r, cluster.split(data[r, rank])))
                          for r in range(data.shape[0])], dict(tr.counters))
            tr.close()
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(data.shape[1])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a worker hung"
    return out


@pytest.fixture
def closing():
    """Hand over anything with close() (clusters, sockets, transports): closed when the test
    ends, last first, also when it fails."""
    with contextlib.ExitStack() as stack:
        yield lambda thing: stack.enter_context(contextlib.closing(thing))


def udp(addr=("127.0.0.1", 0), timeout=2.0):
    """A UDP socket bound to ``addr`` (default: a free loopback port) with a receive timeout."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(addr)
    s.settimeout(timeout)
    return s


IMPAIRMENTS = {  # the cases of `inart bench train --impair`
    "loss 0.1%": Impairment(loss=0.001),
    "loss 1%": Impairment(loss=0.01),
    "reorder 5%": Impairment(reorder=0.05, delay_s=0.003),
    "loss, dup, reorder 5%": Impairment(loss=0.05, dup=0.05, reorder=0.05, delay_s=0.003),
}


@pytest.mark.parametrize("imp", IMPAIRMENTS.values(), ids=IMPAIRMENTS.keys())
def test_exactly_once_under_each_impairment(closing, imp):
    rounds, workers, chunks = 4, 4, 500  # 2,000 chunks per worker over 4 rounds
    cluster = closing(Cluster(workers, [0.6, 0.4], chunks, imp))
    rng = np.random.default_rng(7)
    data = rng.integers(-2**28, 2**28, size=(rounds, workers, chunks, N), dtype=np.int32)
    out = run_rounds(cluster, data)
    expected = data.astype(np.int64).sum(axis=1)
    for sums, _ in out.values():
        for r in range(rounds):  # bit for bit, every round, every worker
            np.testing.assert_array_equal(sums[r], expected[r].astype(np.int32))
    ps = [s.stats() for s in cluster.servers]
    assert sum(p["agg_completed"] for p in ps) == rounds * chunks
    assert sum(p["agg_contributions"] for p in ps) == rounds * chunks * workers
    assert all(p["rounds_completed"] == rounds for p in ps)
    injected = {k: sum(s.sock.counts[k] for s in cluster.servers)
                for k in ("dropped", "duplicated", "reordered")}
    for key, p in (("dropped", imp.loss), ("duplicated", imp.dup), ("reordered", imp.reorder)):
        assert (injected[key] > 0) == (p > 0)  # the impairment really hit (PS side)
    retx = sum(c.get("retx_sent", 0) for _, c in out.values())
    if imp.loss >= 0.01:
        assert retx > 0 and sum(p.get("agg_drop_duplicate", 0) for p in ps) > 0
    print(f"PS counters {ps}\nPS-side injections {injected}, worker RETX {retx}")


@pytest.mark.parametrize("imp", [None, IMPAIRMENTS["loss, dup, reorder 5%"]],
                         ids=["clean", "loss, dup, reorder 5%"])
def test_results_multicast_on_loopback_reach_every_worker_once(closing, imp):
    """With a RESULT group (inart train --script on loopback) each PS sends a chunk's RESULT
    once, every worker gets it through the group, and loss recovery still works: unicast
    answers to resends, beside the group."""
    rounds, workers, chunks = 3, 4, 300
    cluster = closing(Cluster(workers, [0.5, 0.5], chunks, imp, group=pick_group()))
    data = np.random.default_rng(3).integers(-2**28, 2**28, size=(rounds, workers, chunks, N),
                                             dtype=np.int32)
    out = run_rounds(cluster, data)
    expected = data.astype(np.int64).sum(axis=1).astype(np.int32)
    for sums, _ in out.values():
        for r in range(rounds):
            np.testing.assert_array_equal(sums[r], expected[r])
    ps = [s.stats() for s in cluster.servers]
    assert sum(p["result_multicast"] for p in ps) == rounds * chunks
    if imp is None:  # one send per RESULT (and per HELLO reply), not one per worker
        assert sum(p["tx"] for p in ps) == rounds * chunks + workers * len(ps)


def test_unequal_shares_and_single_worker_without_impairment(closing):
    cluster = closing(Cluster(1, [0.9, 0.1], 37))
    data = np.random.default_rng(0).integers(-5, 5, size=(2, 1, 37, N), dtype=np.int32)
    out = run_rounds(cluster, data)
    np.testing.assert_array_equal(out[0][0][1], data[1, 0])
    assert out[0][1].get("retx_sent", 0) == 0


def test_ps_that_never_answers_gives_a_clear_error_quickly(closing):
    silent = closing(udp())  # bound but never reads
    cfg = TransportConfig(n=N, timeout_s=0.02, min_timeout_s=0.01, max_timeout_s=0.05,
                          max_retries=4, hello_timeout_s=0.3)
    tr = closing(WorkerTransport(make_socket(("127.0.0.1", 0)), 1, 0,
                                 [PsLink("s9", silent.getsockname(), None)], cfg))
    t0 = time.monotonic()
    with pytest.raises(PsUnreachable, match=r"s9 .*HELLO|HELLO.*s9"):
        tr.hello()
    with pytest.raises(PsUnreachable, match="PS s9 at .* did not answer chunk 0 of round 3"):
        tr.exchange(3, [np.zeros((5, N), dtype=np.int32)])
    assert time.monotonic() - t0 < 5


def test_ps_counts_bad_packets_and_keeps_serving(closing):
    cluster = closing(Cluster(1, [1.0], 4, job=5))
    ps_addr = cluster.addr["s1"]
    raw = closing(udp())
    zeros = np.zeros(N, dtype=np.int32)
    good = wire.pack(wire.InaHeader(type=wire.TYPE_GRAD, job=5, round=0, chunk=0, bitmap=1),
                     zeros)
    bad = [
        good[:-4],  # wrong length
        wire.pack(wire.InaHeader(type=1, job=6, round=0, chunk=0, bitmap=1), zeros),  # job
        bytes([7]) + good[1:],  # type
        good[:1] + bytes([0x80]) + good[2:],  # flags
        wire.pack(wire.InaHeader(type=1, job=5, round=0, chunk=99, bitmap=1), zeros),  # chunk
        wire.pack(wire.InaHeader(type=1, job=5, round=0, chunk=0, bitmap=2), zeros),  # rank
    ]
    for pkt in bad:
        raw.sendto(pkt, ps_addr)
    time.sleep(0.3)
    stats = cluster.servers[0].stats()
    assert stats["drop_malformed"] == 3
    assert stats["drop_wrong_job"] == 1
    assert stats["agg_drop_bad_chunk"] == 1 and stats["agg_drop_bad_bitmap"] == 1
    data = np.ones((1, 1, 4, N), dtype=np.int32)
    out = run_rounds(cluster, data)
    np.testing.assert_array_equal(out[0][0][0], data[0, 0])


def test_a_late_answer_carries_retx_only_when_the_request_did(closing):
    """The PS answers a GRAD for a completed chunk with its RESULT; without RETX when the GRAD
    was an original, so its worker knows the original was not lost (a resend was spurious)."""
    cluster = closing(Cluster(1, [1.0], 1))
    worker = closing(udp(cluster.addr[cluster.plan.worker_ids[0]]))
    ps = cluster.addr["s1"]
    grad = wire.InaHeader(type=wire.TYPE_GRAD, job=1, round=0, chunk=0, bitmap=1)
    zeros = np.zeros(N, np.int32)
    worker.sendto(wire.pack(grad, zeros), ps)
    assert wire.unpack(worker.recv(2048))[0].flags == 0  # completed by the original
    for flags in (wire.FLAG_RETX, 0):  # a resend, then the original again (reordered)
        worker.sendto(wire.pack(dataclasses.replace(grad, flags=flags), zeros), ps)
        hdr, _ = wire.unpack(worker.recv(2048))
        assert (hdr.type, hdr.chunk, hdr.flags) == (wire.TYPE_RESULT, 0, flags)


def test_overflow_aggregate_is_nacked_and_worker_resends_as_retx(closing):
    """A switch aggregate flagged OVERFLOW: the PS drops it and NACKs the bitmap's workers;
    a worker that gets a NACK resends that chunk as RETX."""
    cluster = closing(Cluster(2, [1.0], 1))
    # PS side: the NACK goes to both workers named in the bitmap
    w_socks = [closing(udp(cluster.addr[w])) for w in cluster.plan.worker_ids]
    agg = wire.InaHeader(type=wire.TYPE_GRAD, job=1, round=0, chunk=0, count=2, bitmap=3,
                         flags=wire.FLAG_AGGREGATED | wire.FLAG_OVERFLOW)
    closing(udp()).sendto(wire.pack(agg, np.zeros(N, np.int32)), cluster.addr["s1"])
    for rank, s in enumerate(w_socks):
        hdr, _ = wire.unpack(s.recv(2048))
        assert (hdr.type, hdr.slot, hdr.chunk, hdr.bitmap) == (
            wire.TYPE_ACK, wire.CTRL_OVERFLOW_NACK, 0, 1 << rank)
    assert cluster.servers[0].stats()["overflow_aggregate"] == 1
    # worker side: a scripted PS that NACKs the first GRAD, then answers the RETX
    fake = closing(udp())
    tr = closing(WorkerTransport(make_socket(("127.0.0.1", 0)), 1, 0,
                                 [PsLink("s1", fake.getsockname(), None)], TransportConfig(n=N)))
    seen = []

    def script():
        data, addr = fake.recvfrom(2048)
        seen.append(wire.unpack(data)[0])
        fake.sendto(wire.pack(wire.InaHeader(type=wire.TYPE_ACK, job=1, round=0, chunk=0,
                                             slot=wire.CTRL_OVERFLOW_NACK), zeros), addr)
        data, addr = fake.recvfrom(2048)
        seen.append(wire.unpack(data)[0])
        fake.sendto(wire.pack(wire.InaHeader(type=wire.TYPE_RESULT, job=1, round=0, chunk=0),
                              np.full(N, 9, np.int32)), addr)

    zeros = np.zeros(N, np.int32)
    thread = threading.Thread(target=script)
    thread.start()
    result = tr.exchange(0, [np.ones((1, N), np.int32)])
    thread.join(timeout=5)
    assert result[0][0].tolist() == [9] * N
    assert seen[0].flags == 0 and seen[1].flags == wire.FLAG_RETX
    assert tr.counters["overflow_resent"] == 1


def test_pacer_starts_empty_and_bursts_only_what_it_earned():
    pacer = Pacer(8000.0, burst_bytes=500)  # 1000 bytes/s
    assert pacer.delay(100, pacer.stamp) == pytest.approx(0.1)  # no start-of-round burst
    later = pacer.stamp + 10.0  # a long stall earns at most burst_bytes
    assert pacer.delay(500, later) == 0.0
    pacer.take(500, later)
    assert pacer.delay(100, later) == pytest.approx(0.1)


def test_rto_floor_is_the_windows_time_at_the_paced_rate(closing):
    cfg = TransportConfig(n=N, window=10, max_timeout_s=1.0)
    addr = ("127.0.0.1", 9)
    tr = closing(WorkerTransport(make_socket(("127.0.0.1", 0)), 1, 0, [], cfg))
    frame_bits = tr.bytes_per_packet() * 8
    assert tr.rto_floor(PsLink("s1", addr, None)) == 0.0  # unpaced: RTT samples only
    assert tr.rto_floor(PsLink("s1", addr, 100 * frame_bits)) == pytest.approx(0.1)
    # not capped at max_timeout_s: at one frame a second the window of 10 takes 10 s
    assert tr.rto_floor(PsLink("s1", addr, frame_bits)) == pytest.approx(10.0)


def test_pacing_holds_the_target_rate(closing):
    cluster = closing(Cluster(1, [1.0], 400))
    rate = 2e6  # bit/s
    link = PsLink("s1", cluster.addr["s1"], rate)
    tr = closing(WorkerTransport(make_socket(cluster.addr["w1"]), 1, 0, [link],
                                 TransportConfig(n=N)))
    t0 = time.monotonic()
    tr.exchange(0, [np.zeros((400, N), np.int32)])
    elapsed = time.monotonic() - t0
    bits = 400 * tr.bytes_per_packet() * 8  # the bucket starts empty: no initial burst
    assert elapsed >= 0.9 * bits / rate
    print(f"paced at {bits / elapsed / 1e6:.2f} Mbit/s (target {rate / 1e6:.2f})")


def test_kernel_pacing_hands_the_window_to_the_kernel_at_once(closing):
    """With pacing="kernel" the host's egress queue paces (emulation/network/host_pacing.py): the
    worker sends its window without waiting, and still times out no sooner than the window
    takes at the stream's rate."""
    cluster = closing(Cluster(1, [1.0], 400))
    rate = 2e6  # bit/s: 400 chunks would take ~1.7 s paced here
    link = PsLink("s1", cluster.addr["s1"], rate)
    tr = closing(WorkerTransport(make_socket(cluster.addr["w1"]), 1, 0, [link],
                                 TransportConfig(n=N, pacing="kernel")))
    t0 = time.monotonic()
    tr.exchange(0, [np.zeros((400, N), np.int32)])
    bits = 400 * tr.bytes_per_packet() * 8
    assert time.monotonic() - t0 < 0.5 * bits / rate
    assert tr.counters["pacing_waits"] == 0
    assert tr.rto_floor(link) == pytest.approx(tr.cfg.window * bits / 400 / rate)


def test_kernel_paced_chunks_are_timed_from_when_the_kernel_sends_them():
    """A window handed to the kernel at once leaves one frame time apart: its timers start
    there, not at the hand-over (which fired spurious resends at the window's end)."""
    from host_stack.ina.transport import _PsRound

    link = PsLink("s1", ("127.0.0.1", 9), 8000.0)  # 1000 bytes/s: a 100-byte frame 0.1 s
    rows = np.zeros((4, 8), np.uint8)
    sums = np.zeros((4, 2), np.int32)
    kernel = _PsRound(link, rows, sums, 0.0, user_paced=False)
    assert kernel.departures(10.0, 3, 100) == pytest.approx([10.1, 10.2, 10.3])
    assert kernel.departures(10.05, 1, 100) == pytest.approx([10.4])  # behind the queue
    assert kernel.departures(20.0, 1, 100) == pytest.approx([20.1])  # drained meanwhile
    assert _PsRound(link, rows, sums, 0.0).departures(10.0, 3, 100) == 10.0  # user: now
    with pytest.raises(ValueError, match="pacing 'fq'"):
        TransportConfig(pacing="fq")


def test_worker_of_another_job_gets_a_clear_error(closing):
    cluster = closing(Cluster(1, [1.0], 4, job=5))
    cfg = TransportConfig(n=N, hello_timeout_s=0.5)
    links = [PsLink("s1", cluster.addr["s1"], None)]
    tr = closing(WorkerTransport(make_socket(("127.0.0.1", 0)), 6, 0, links, cfg))
    with pytest.raises(TransportError, match=r"PS s1 at .* serves job 5, but this "
                                             r"worker's plan is for job 6"):
        tr.hello()
    assert cluster.servers[0].stats()["drop_wrong_job"] >= 1


def test_result_goes_once_to_a_multicast_target_when_configured(closing):
    """With --result-to (a switch that replicates), one RESULT per chunk, not one per worker;
    a late request is still answered by unicast to its sender."""
    cluster = closing(Cluster(2, [1.0], 1))
    sink = closing(udp())
    cluster.servers[0].targets = [sink.getsockname()]
    workers = [closing(udp(timeout=0.5)) for _ in range(2)]
    for rank, w in enumerate(workers):
        w.sendto(wire.pack(wire.InaHeader(type=1, job=1, round=0, chunk=0, bitmap=1 << rank),
                           np.full(N, rank + 1, np.int32)), cluster.addr["s1"])
    hdr, vals = wire.unpack(sink.recv(2048))
    assert hdr.type == wire.TYPE_RESULT and hdr.count == 2 and vals.tolist() == [3] * N
    with pytest.raises(TimeoutError):
        workers[0].recv(2048)  # no per-worker copy
    workers[1].sendto(wire.pack(wire.InaHeader(type=1, job=1, round=0, chunk=0, bitmap=2,
                                               flags=wire.FLAG_RETX),
                                np.full(N, 2, np.int32)), cluster.addr["s1"])
    hdr, _ = wire.unpack(workers[1].recv(2048))
    assert hdr.type == wire.TYPE_RESULT and hdr.flags == wire.FLAG_RETX
    # a late switch aggregate is not answered (its source is the switch)
    workers[0].sendto(wire.pack(wire.InaHeader(type=1, job=1, round=0, chunk=0, bitmap=3,
                                               count=2, flags=wire.FLAG_AGGREGATED),
                                np.zeros(N, np.int32)), cluster.addr["s1"])
    with pytest.raises(TimeoutError):
        workers[0].recv(2048)
    assert cluster.servers[0].stats()["late_aggregate_ignored"] == 1


def _stream(closing, chunks=16, config=None):
    """A worker transport and one round's state towards a PS that is not there."""
    from host_stack.ina.transport import _PsRound

    tr = WorkerTransport(make_socket(("127.0.0.1", 0)), job=1, rank=0,
                         links=[PsLink("s1", ("127.0.0.1", 9), None)], config=config)
    closing(tr)
    rows = tr.grad_rows(0, 0, chunks)
    return tr, _PsRound(tr.links[0], rows, np.zeros((chunks, N), np.int32), 0.0)


def _results_batch(chunks, flags=0, rnd=0):
    chunks = np.asarray(chunks, np.int64)
    hdrs = wire.headers(len(chunks), wire.TYPE_RESULT, 1, rnd, chunks, chunks, 1, flags)
    rows = wire.pack_batch(hdrs, np.repeat(chunks[:, None], N, axis=1).astype(np.int32), n=N)
    return wire.parse_batch(rows, np.full(len(chunks), rows.shape[1]), N)[0]


def test_resend_scans_the_window_only_when_something_may_have_fallen_due(closing):
    """A wake that brought nothing due for a stream costs no scan of its window: the
    earliest time anything may be due is kept, and brought forward only by what can make
    something due sooner: a chunk passed (its reordering window), an answer while gated
    chunks wait for one, the tail's stall once all was sent, chunks sent."""
    tr, st = _stream(closing, chunks=32, config=LONG_TIMERS)
    tr.rtt.sample(0.1)
    scans = []
    scan = tr._scan
    tr._scan = lambda *a: scans.append(a[-1]) or scan(*a)
    t0 = time.monotonic()
    tr._send_new(st, t0)
    assert st.next_new == 32
    wake = tr._resend(st, 0, t0)
    assert len(scans) == 1 and 0 < wake <= tr.cfg.max_timeout_s
    assert tr._resend(st, 0, t0 + 0.001) == pytest.approx(wake - 0.001)  # nothing new
    tr._results(st, 0, _results_batch([0, 1]), t0 + 0.001)  # in order: nothing passed
    stall = tr._stall(st)
    assert tr._resend(st, 0, t0 + 0.002) == pytest.approx(stall - 0.001)  # the tail's stall
    assert len(scans) == 1
    tr._results(st, 0, _results_batch([3]), t0 + 0.002)  # 2 passed, 4-31 owed: gated
    window = tr.reorder.value(tr.rtt.srtt)
    assert tr._resend(st, 0, t0 + 0.002) == pytest.approx(window)
    assert len(scans) == 1
    tr._resend(st, 0, t0 + 0.002 + window)  # its window is over: scanned, but gated
    assert len(scans) == 2 and tr.counters["retx_sent"] == 0
    tr._resend(st, 0, t0 + 0.003 + window)  # nothing new: no scan
    assert len(scans) == 2
    tr._results(st, 0, _results_batch([4]), t0 + 0.004 + window)  # the answer releases 2
    tr._resend(st, 0, t0 + 0.004 + window)
    assert len(scans) == 3 and st.resends.nonzero()[0].tolist() == [2]


# timeouts far beyond the test's clock: only the reordering rule resends
LONG_TIMERS = TransportConfig(n=N, timeout_s=1.0, min_timeout_s=1.0, max_timeout_s=2.0)


def test_a_ps_that_answers_nothing_after_passing_a_chunk_stalled_and_lost_nothing(closing):
    """Chunk 3 was passed while the PS still owed 6-15: a silence of many reordering windows
    is a stall (a descheduled PS), no resend; the PS's next answer, a window or more after
    the passing, shows it ran without completing 3: then 3 is lost and resent alone."""
    tr, st = _stream(closing, config=LONG_TIMERS)
    tr.rtt.sample(0.1)  # a tail probe only after two SRTTs of silence
    t0 = time.monotonic()
    tr._send_new(st, t0)
    tr._results(st, 0, _results_batch([0, 1, 2, 4, 5]), t0)
    window = tr.reorder.value(tr.rtt.srtt)
    later = t0 + 50 * window
    wake = tr._resend(st, 0, later)
    assert tr.counters["retx_sent"] == 0
    assert wake > 0.1  # no wake for the window: the PS's next RESULT brings one
    tr._results(st, 0, _results_batch([6]), later)
    tr._resend(st, 0, later)
    assert tr.counters["retx_fast"] == tr.counters["retx_sent"] == 1
    assert st.resends.nonzero()[0].tolist() == [3]


def test_a_passed_chunk_is_resent_once_its_ps_was_silent_for_a_stall(closing):
    """What the PS owes may be lost too (its last chunk, say): after a stall's silence the
    reordering window alone decides, beside the tail probe, not the chunk's RTO."""
    tr, st = _stream(closing, config=LONG_TIMERS)
    tr.rtt.sample(0.1)
    t0 = time.monotonic()
    tr._send_new(st, t0)
    tr._results(st, 0, _results_batch([0, 1, 2, *range(4, 15)]), t0)  # 3 and 15 missing
    wake = tr._resend(st, 0, t0 + 0.01)
    assert tr.counters["retx_sent"] == 0 and wake == pytest.approx(tr._stall(st) - 0.01)
    tr._resend(st, 0, t0 + 1.001 * tr._stall(st))
    assert st.resends[3] == 1 and tr.counters["retx_fast"] >= 1


def test_a_chunk_passed_when_its_ps_owes_nothing_later_is_resent_after_the_window(closing):
    """The round's tail: nothing later will come to show the PS ran, so the reordering
    window alone decides (RACK)."""
    tr, st = _stream(closing, config=LONG_TIMERS)
    t0 = time.monotonic()
    tr._send_new(st, t0)
    tr._results(st, 0, _results_batch([0, 1, 2, *range(4, 16)]), t0)
    window = tr.reorder.value(tr.rtt.srtt)
    assert tr._resend(st, 0, t0) == pytest.approx(window)  # woken when the window is over
    tr._resend(st, 0, t0 + window)
    assert tr.counters["retx_fast"] == 1 and st.resends.nonzero()[0].tolist() == [3]


def test_results_batches_out_of_order_or_repeated_complete_each_chunk_once(closing):
    """The short path (this round, ascending, all new) and the general one agree."""
    tr, st = _stream(closing)
    tr._send_new(st, time.monotonic())
    now = time.monotonic()
    assert tr._results(st, 0, _results_batch([3, 4, 5]), now) == 3
    assert tr._results(st, 0, _results_batch([9, 7, 7, 4]), now) == 2  # 4: done already
    assert tr._results(st, 0, _results_batch([10, 11], rnd=1), now) == 0  # stale round
    assert tr._results(st, 0, _results_batch([0, 1, 2, 6]), now) == 4
    assert st.done.nonzero()[0].tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 9]
    assert st.n_done == 9 and st.oldest_outstanding() == 8
    assert (st.results[[0, 7, 9], 0] == [0, 7, 9]).all()
    assert tr.counters["result_duplicate"] == 2 and tr.counters["result_stale_round"] == 2
    assert np.isfinite(st.passed_at[8]) and not np.isfinite(st.passed_at[10])
    assert tr._results(st, 0, _results_batch([12, 13, 10]), now + 1) == 3  # held 10 came last
    assert st.done[[10, 12, 13]].all() and not st.done[11] and st.max_done == 13
    assert st.passed_at[11] == now + 1 and st.passed_at[8] < now + 1  # passed once, first time
    st.done[8] = st.done[11] = st.done[14:] = True
    assert st.oldest_outstanding() == 16


def test_worker_counts_what_is_not_a_result_of_its_job_and_maps_sources(closing):
    """Malformed packets, other jobs and unknown hosts are counted and dropped; a RESULT from
    another port of a PS's host counts for the first PS there (a switch's copy)."""
    from host_stack.ina.transport import _PsRound

    a, b, stranger = (closing(udp((h, 0))) for h in ("127.0.0.1", "127.0.0.1", "127.0.0.2"))
    other_port = closing(udp())
    links = [PsLink("s1", a.getsockname(), None), PsLink("s2", b.getsockname(), None)]
    tr = closing(WorkerTransport(make_socket(("127.0.0.1", 0)), job=1, rank=0, links=links))
    states = []
    for ps, link in enumerate(links):
        states.append(_PsRound(link, tr.grad_rows(ps, 0, 4), np.zeros((4, N), np.int32), 0.0))
        states[-1].next_new = 4
    me = tr.sock.getsockname()

    def result(chunk, job=1):
        return wire.pack(wire.InaHeader(type=wire.TYPE_RESULT, job=job, round=0, chunk=chunk),
                         np.full(N, chunk, np.int32))

    a.sendto(result(0), me)
    b.sendto(result(1), me)
    a.sendto(result(2)[:-1], me)  # malformed: short
    a.sendto(result(2, job=7), me)  # another job
    stranger.sendto(result(3), me)  # a host that is no PS
    other_port.sendto(result(3), me)  # the PSs' host, another port: the first PS there
    time.sleep(0.05)
    assert tr._receive(states, 0) == 3
    assert states[0].done.tolist() == [True, False, False, True]
    assert states[1].done.tolist() == [False, True, False, False]
    c = tr.counters
    assert (c["rx_malformed"], c["rx_wrong_job"], c["rx_unknown_source"]) == (1, 1, 1)
