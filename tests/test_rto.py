"""The worker's retransmission timeout (RFC 6298) and how it tells spurious retransmissions
from real losses, against a scripted PS."""

import socket
import threading
import time

import numpy as np
import pytest

from host_stack.ina import wire
from host_stack.ina.reorder import MARGIN
from host_stack.ina.rto import CLOCK_GRANULARITY, RtoEstimator
from host_stack.ina.transport import PsLink, TransportConfig, WorkerTransport, make_socket

N = 32


def test_rto_follows_rfc6298():
    est = RtoEstimator(initial=1.0, lo=0.01, hi=5.0)
    assert est.rto == 1.0  # before any sample
    est.sample(0.1)
    assert (est.srtt, est.rttvar) == (0.1, 0.05)
    assert est.rto == pytest.approx(0.1 + 4 * 0.05)
    est.sample(0.3)
    assert est.rttvar == pytest.approx(0.75 * 0.05 + 0.25 * 0.2)
    assert est.srtt == pytest.approx(0.875 * 0.1 + 0.125 * 0.3)
    assert est.rto == pytest.approx(est.srtt + 4 * est.rttvar)


def test_rto_is_clamped_and_steady_rtts_shrink_it():
    est = RtoEstimator(initial=0.2, lo=0.05, hi=1.0)
    est.sample(10.0)
    assert est.rto == 1.0
    for _ in range(200):
        est.sample(0.001)
    assert est.rto == 0.05  # srtt + max(G, 4 rttvar) is below lo
    assert est.srtt + CLOCK_GRANULARITY < 0.05


def test_backoff_doubles_up_to_the_cap():
    est = RtoEstimator(initial=0.1, lo=0.01, hi=1.0)
    assert [est.backoff(0.1, k) for k in range(5)] == [0.1, 0.2, 0.4, 0.8, 1.0]


def test_rto_rejects_inconsistent_bounds():
    with pytest.raises(ValueError, match="rto"):
        RtoEstimator(initial=0.01, lo=0.1, hi=1.0)


def test_chunks_sent_before_the_rounds_first_result_wait_for_the_slower_start():
    tr = WorkerTransport(make_socket(("127.0.0.1", 0)), 1, 0, [], TransportConfig(n=N))
    for _ in range(10):
        tr.rtt.sample(0.01)
        tr.start_rtt.sample(0.3)

    class St:
        rto_floor, first_result = 0.0, False

    assert tr._timeout(St) == pytest.approx(tr.start_rtt.rto)
    St.first_result = True
    assert tr._timeout(St) == pytest.approx(tr.rtt.rto)
    tr.close()


class ScriptedPs:
    """A PS socket a test drives by hand: it sees what the worker sends and answers."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:  # room for a whole window whatever net.core.rmem_max says (as root)
            self.sock.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)  # SO_RCVBUFFORCE
        except PermissionError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(5)
        self.worker = None

    def next(self):
        data, self.worker = self.sock.recvfrom(2048)
        return wire.unpack(data)[0]

    def result(self, chunk, flags=0, value=7):
        hdr = wire.InaHeader(type=wire.TYPE_RESULT, job=1, round=0, chunk=chunk, count=1,
                             bitmap=1, flags=flags)
        self.sock.sendto(wire.pack(hdr, np.full(N, value, np.int32)), self.worker)


def exchange(script, chunks, cfg=None, transport=False):
    ps = ScriptedPs()
    cfg = cfg or TransportConfig(n=N, timeout_s=0.05, min_timeout_s=0.05, max_timeout_s=0.4)
    tr = WorkerTransport(make_socket(("127.0.0.1", 0)), 1, 0,
                         [PsLink("s1", ps.sock.getsockname(), None)], cfg)
    thread = threading.Thread(target=script, args=(ps,))
    thread.start()
    out = tr.exchange(0, [np.ones((chunks, N), np.int32)])
    thread.join(timeout=10)
    tr.close()
    ps.sock.close()
    return (out, tr.counters, tr) if transport else (out, tr.counters)


# timers far longer than the test may take: what recovers within it is not an RTO
SLOW_TIMERS = TransportConfig(n=N, timeout_s=3.0, min_timeout_s=3.0, max_timeout_s=6.0)


def answer_all_but(ps, chunks, lost):
    """Read the worker's originals of ``chunks`` chunks, answer all but ``lost``; then the
    next packet the worker sends (its resend)."""
    for _ in range(chunks):
        assert ps.next().flags == 0
    for c in range(chunks):
        if c != lost:
            ps.result(c)
    return ps.next()


def test_a_lost_chunk_is_resent_alone_once_a_higher_one_completed():
    resent = []

    def script(ps):
        resent.append(answer_all_but(ps, 10, lost=3))
        ps.result(3, flags=wire.FLAG_RETX)

    t0 = time.monotonic()
    out, c = exchange(script, 10, SLOW_TIMERS)
    assert time.monotonic() - t0 < 1.5  # a reordering window, not the 3 s RTO
    assert [(h.chunk, h.flags) for h in resent] == [(3, wire.FLAG_RETX)]
    assert (c["retx_sent"], c["retx_fast"], c["retx_spurious"]) == (1, 1, 0)
    assert out[0].tolist() == [[7] * N] * 10


def test_a_lost_last_chunk_is_probed_when_the_stream_stalls():
    """The tail: no higher chunk can pass the last one; a stall of about an SRTT is enough."""
    resent = []

    def script(ps):
        resent.append(answer_all_but(ps, 10, lost=9))
        ps.result(9, flags=wire.FLAG_RETX)

    t0 = time.monotonic()
    _, c = exchange(script, 10, SLOW_TIMERS)
    assert time.monotonic() - t0 < 1.5
    assert [(h.chunk, h.flags) for h in resent] == [(9, wire.FLAG_RETX)]
    assert c["retx_probe"] >= 1 and c["retx_sent"] == 1


def test_a_reordered_original_makes_the_resend_spurious_and_widens_the_window():
    late = 0.03

    def script(ps):
        answer_all_but(ps, 10, lost=3)  # the worker resends 3 after a short window ...
        time.sleep(late)
        ps.result(3)  # ... but the original only came late: RESULT without RETX

    _, c, tr = exchange(script, 10, SLOW_TIMERS, transport=True)
    assert c["retx_fast"] == 1 and c["retx_spurious"] == c["retx_sent"] >= 1
    assert tr.reorder.learned >= MARGIN * late  # the next such delay is waited out
    assert tr.start_rtt.srtt < late  # a reordering, not a slow network: no Eifel response


def test_a_late_result_made_of_the_originals_makes_the_resend_spurious():
    def script(ps):
        assert ps.next().flags == 0
        assert ps.next().flags == wire.FLAG_RETX  # the worker gave up waiting ...
        ps.result(0)  # ... but the sum was made of the original: RESULT without RETX

    out, c = exchange(script, 1)
    assert out[0][0].tolist() == [7] * N
    assert c["retx_sent"] >= 1 and c["retx_spurious"] == c["retx_sent"]


def test_a_result_that_needed_the_resend_is_a_loss_not_spurious():
    def script(ps):
        ps.next()  # "lost"
        assert ps.next().flags == wire.FLAG_RETX
        ps.result(0, flags=wire.FLAG_RETX)  # the RETX went into the sum

    _, c = exchange(script, 1)
    assert c["retx_sent"] >= 1 and c["retx_spurious"] == 0


def test_a_second_result_answering_our_resend_marks_it_spurious():
    def script(ps):
        seen = [ps.next() for _ in range(2)]  # chunks 0 and 1
        while True:  # until chunk 0 was resent
            hdr = ps.next()
            seen.append(hdr)
            if hdr.chunk == 0 and hdr.flags == wire.FLAG_RETX:
                break
        ps.result(0, flags=wire.FLAG_RETX)  # first RESULT of 0: a loss for all we know
        ps.result(0, flags=wire.FLAG_RETX)  # the PS answering our RETX too: it was spurious
        ps.result(1, flags=wire.FLAG_RETX)

    _, c = exchange(script, 2)
    assert c["result_duplicate"] == 1 and c["retx_spurious"] == 1


def test_one_sample_per_srtt_the_largest_rtt_since_the_last():
    est = RtoEstimator(initial=1.0, lo=0.001, hi=5.0)
    est.observe(0.1, now=10.0)  # the first commits at once
    est.observe(0.5, now=10.01)  # within one SRTT: held
    est.observe(0.2, now=10.02)
    assert est.samples == 1
    est.observe(0.1, now=10.2)  # an SRTT later: the largest since the last sample
    assert est.samples == 2 and est.srtt == pytest.approx(0.875 * 0.1 + 0.125 * 0.5)


def test_a_spurious_resend_raises_the_timeout_to_cover_its_delay():
    est = RtoEstimator(initial=1.0, lo=0.001, hi=5.0)
    for _ in range(20):
        est.sample(0.01)
    est.spurious(0.3)  # RFC 4015: SRTT >= R', RTTVAR >= R'/2
    assert est.srtt == 0.3 and est.rttvar == 0.15 and est.rto == pytest.approx(0.9)


def test_auto_window_fills_the_ps_queue_within_the_slot_pool():
    """As many chunks as every worker's window fits in the PS's queue, never more than the
    slot pool (one stream's outstanding chunks never share a switch slot), never below 32."""
    from host_stack.ina.transport import PS_QUEUE, auto_window

    assert auto_window(10) == PS_QUEUE // 10 > TransportConfig.window
    assert auto_window(10) * 10 <= PS_QUEUE and auto_window(64) * 64 <= PS_QUEUE
    assert auto_window(6) == TransportConfig.pool_size  # the pool, not the queue, bounds it
    assert auto_window(6, pool_size=512) == 512
    assert auto_window(10_000) == 32  # never below a useful window


def test_auto_window_of_large_packets_keeps_their_bytes_within_the_ps_queue():
    """64 KB loopback datagrams: a window of chunks counts their bytes."""
    from host_stack.ina import wire
    from host_stack.ina.transport import PS_QUEUE_BYTES, auto_window

    big = 16370
    assert 1 <= auto_window(6, n=big) * 6 * wire.packet_len(big) <= PS_QUEUE_BYTES
    assert auto_window(6, n=big) < auto_window(6, n=362) < auto_window(6)
    assert auto_window(64, n=big) == 2


def test_before_the_first_result_at_most_the_initial_window_is_outstanding():
    """A window larger than INITIAL_WINDOW opens only once the PS answered: the first burst
    waits for every worker to start, and a whole shard sent so would leave the steady RTT
    estimator without a sample all round."""
    from host_stack.ina.transport import INITIAL_WINDOW

    chunks, window = INITIAL_WINDOW + 200, INITIAL_WINDOW + 100
    seen = []

    def script(ps):
        ps.sock.settimeout(0.5)
        first = []
        try:
            while True:
                first.append(ps.next().chunk)
        except TimeoutError:
            pass
        seen.append(len(first))
        ps.sock.settimeout(5)
        ps.result(0)  # one answer opens the whole window: 100 more go at once
        more = [ps.next().chunk for _ in range(100)]
        seen.append(more)
        for c in range(1, INITIAL_WINDOW + 100):
            ps.result(c)
        rest = [ps.next().chunk for _ in range(100)]
        for c in range(INITIAL_WINDOW + 100, chunks):
            ps.result(c)
        seen.append(rest)

    cfg = TransportConfig(n=N, window=window, timeout_s=1.0, min_timeout_s=1.0,
                          max_timeout_s=1.0, max_retries=2)
    out, c = exchange(script, chunks, cfg)
    assert seen[0] == INITIAL_WINDOW
    assert seen[1] == list(range(INITIAL_WINDOW, INITIAL_WINDOW + 100))
    assert seen[2] == list(range(INITIAL_WINDOW + 100, chunks))
    assert c["retx_sent"] == 0 and out[0].tolist() == [[7] * N] * chunks


def test_a_stalled_tail_is_probed_a_few_chunks_per_stall_not_whole():
    """Chunks 2-9 wait (for a slow worker, say): one stall probes the PROBES lowest; the
    others wait for the next stall, so a slow worker's tail is not resent whole."""
    from host_stack.ina.transport import PROBES

    seen = set()

    def script(ps):
        for _ in range(10):
            ps.next()
        time.sleep(0.05)  # RTT 50 ms: the stall is two of those
        ps.result(0)
        ps.result(1)
        t_end = time.monotonic() + 0.18  # before a second stall could end (at 0.2 s)
        ps.sock.settimeout(0.01)
        while time.monotonic() < t_end:
            try:
                seen.add(ps.next().chunk)
            except TimeoutError:
                pass
        for c in range(2, 10):
            ps.result(c, flags=wire.FLAG_RETX)

    _, c = exchange(script, 10, SLOW_TIMERS)
    assert seen == set(range(2, 2 + PROBES)), (seen, dict(c))
    assert c["retx_probe"] == PROBES


def test_resends_wait_an_srtt_four_times_then_back_off_never_below_the_paced_floor():
    from host_stack.ina.transport import RETX_MIN_TIMEOUT, STEADY_RESENDS

    tr = WorkerTransport(make_socket(("127.0.0.1", 0)), 1, 0, [], TransportConfig(n=N))
    for _ in range(10):
        tr.rtt.sample(0.01)

    class St:
        rto_floor, first_result = 0.0, True

    got = tr._retx_timeout(St, np.arange(1, STEADY_RESENDS + 4))
    srtt = tr.rtt.srtt
    assert got[:STEADY_RESENDS].tolist() == pytest.approx([srtt] * STEADY_RESENDS)
    assert got[STEADY_RESENDS:].tolist() == pytest.approx([2 * srtt, 4 * srtt, 8 * srtt])
    assert tr._retx_timeout(St, np.array([40]))[0] == tr.cfg.max_timeout_s  # capped
    St.rto_floor = 0.3  # a slowly paced PS: its window takes 0.3 s
    assert tr._retx_timeout(St, np.array([1]))[0] == pytest.approx(0.3)
    assert tr._retx_timeout(St, np.array([40]))[0] == pytest.approx(max(1.0, 0.6))
    St.rto_floor = 0.0
    for _ in range(50):
        tr.rtt.sample(0.0)
    assert tr._retx_timeout(St, np.array([1]))[0] >= RETX_MIN_TIMEOUT
    tr.close()


def test_resends_after_the_whole_shard_was_sent_wait_least_rtts_not_the_srtt():
    """The round's tail: the PS's queue only drains, a resend is answered about as fast as
    the fastest chunk was, so it waits TAIL_RESEND_RTTS least RTTs when that is shorter."""
    from host_stack.ina.transport import RETX_MIN_TIMEOUT, TAIL_RESEND_RTTS

    tr = WorkerTransport(make_socket(("127.0.0.1", 0)), 1, 0, [], TransportConfig(n=N))
    for _ in range(10):
        tr.rtt.sample(0.013)
    tr.reorder.observe_rtt(0.003)

    class St:
        rto_floor, first_result, next_new, n_chunks = 0.0, True, 10, 20

    srtt = tr.rtt.srtt
    assert tr._retx_timeout(St, np.array([1]))[0] == pytest.approx(srtt)  # still sending
    St.next_new = 20  # everything sent
    assert tr._retx_timeout(St, np.array([1, 5]))[0] == pytest.approx(TAIL_RESEND_RTTS * 0.003)
    assert tr._retx_timeout(St, np.array([5]))[0] == pytest.approx(2 * TAIL_RESEND_RTTS * 0.003)
    tr.reorder.min_rtt = 0.0001
    assert tr._retx_timeout(St, np.array([1]))[0] == RETX_MIN_TIMEOUT  # never below
    tr.reorder.min_rtt = 0.02  # least RTTs longer than the SRTT: the SRTT
    assert tr._retx_timeout(St, np.array([1]))[0] == pytest.approx(srtt)
    St.rto_floor = 0.3  # never below a paced PS's floor
    assert tr._retx_timeout(St, np.array([1]))[0] == pytest.approx(0.3)
    tr.close()
