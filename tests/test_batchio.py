"""Batched UDP I/O (host_stack/ina/batchio.py and its C extension) and the batch rules of the
PS's aggregator: edge cases a per-packet loop would not have."""

import socket
import time

import numpy as np
import pytest

from host_stack.ina import wire
from host_stack.ina.aggregator import ANSWER_LATE, COMPLETED, DUPLICATE, ChunkAggregator
from host_stack.ina.batchio import GSO_SEGMENTS, BatchSocket, ipv4, make_socket
from host_stack.ina.impair import HEAD, ImpairedSocket, Impairment
from host_stack.ina.native import _batchio
from host_stack.ina.ps_apply import SumApply

L = 16  # row length of these tests' datagrams


def pair(gso="loopback"):
    rx, tx = make_socket(("127.0.0.1", 0)), make_socket(("127.0.0.1", 0))
    return BatchSocket(rx, L), BatchSocket(tx, L, gso=gso), rx.getsockname()


def drain(b, want, tries=200):
    """Receive until ``want`` datagrams came (loopback delivers at once; bounded anyway)."""
    rows, lens, srcs = [], [], []
    for _ in range(tries):
        k = b.recv()
        rows.append(b.data[:k].copy())
        lens.append(b.lens[:k].copy())
        srcs.append(b.ports[:k].copy())
        if sum(len(x) for x in lens) >= want:
            break
    return np.concatenate(rows), np.concatenate(lens), np.concatenate(srcs)


def stamping_on_arrival(sock: socket.socket) -> None:
    """Wait until the kernel stamps datagrams when they arrive: SO_TIMESTAMPNS turns receive
    stamping on through deferred work (net_enable_timestamp), and until it ran recvmsg stamps
    a datagram when it is read, so on a machine where nothing else stamps, the first datagrams
    would look as if they arrived at the read."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _ in range(200):
            probe.sendto(b"p", sock.getsockname())
            time.sleep(0.005)
            _, anc, _, _ = sock.recvmsg(64, socket.CMSG_SPACE(16))
            stamps = [np.frombuffer(d[:16], np.int64) for lvl, typ, d in anc
                      if lvl == socket.SOL_SOCKET and len(d) >= 16]
            if stamps and stamps[0][0] + stamps[0][1] * 1e-9 < time.time() - 0.004:
                return
        pytest.fail("the kernel never stamped a datagram on arrival")
    finally:
        probe.close()


def numbered(count):
    rows = np.zeros((count, L), np.uint8)
    rows[:, :4] = np.arange(count, dtype=">u4").view(np.uint8).reshape(count, 4)
    return rows


@pytest.mark.parametrize("gso", ["loopback", "off"])
def test_batches_arrive_whole_and_in_order_with_and_without_gso(gso):
    rx, tx, (host, port) = pair(gso)
    count = 3 * GSO_SEGMENTS + 5  # several GSO messages and a short last one
    rows = numbered(count)
    order = np.arange(count)[::-1].copy()  # rows in any order, not only contiguous
    res = tx.send(rows, order, np.array([ipv4(host)], np.uint32), np.array([port], np.uint16))
    assert (res.done, res.errors) == (count, 0)
    got, lens, _ = drain(rx, count)
    assert (lens == L).all() and len(got) == count
    np.testing.assert_array_equal(got, rows[order])


def test_full_size_packets_still_leave_in_gso_batches():
    """64 segments of a 1,472-byte packet would be more than one UDP datagram holds: the
    socket sends as many as fit (44), and the kernel takes them as GSO batches."""
    big = wire.packet_len(362)
    rx = make_socket(("127.0.0.1", 0))
    tx = BatchSocket(make_socket(("127.0.0.1", 0)), big)
    assert tx.gso_segs == 44 and BatchSocket(make_socket(("127.0.0.1", 0)), L).gso_segs == 64
    host, port = rx.getsockname()
    rows = np.zeros((200, big), np.uint8)
    rows[:, :4] = np.arange(200, dtype=">u4").view(np.uint8).reshape(200, 4)
    res = tx.send(rows, np.arange(200), np.array([ipv4(host)], np.uint32),
                  np.array([port], np.uint16))
    assert (res.done, res.errors) == (200, 0)
    assert tx.gso_segs == 44  # the kernel did not refuse them
    got, lens, _ = drain(BatchSocket(rx, big), 200)
    assert len(got) == 200 and (lens == big).all()


def test_per_row_destinations_and_sources():
    a, tx, (host, pa) = pair()
    b = BatchSocket(make_socket(("127.0.0.1", 0)), L)
    pb = b.sock.getsockname()[1]
    rows = numbered(6)
    ports = np.array([pa, pb, pa, pa, pb, pb], np.uint16)
    tx.send(rows, np.arange(6), np.full(6, ipv4(host), np.uint32), ports)
    got_a, _, src = drain(a, 3)
    got_b, _, _ = drain(b, 3)
    np.testing.assert_array_equal(got_a, rows[[0, 2, 3]])
    np.testing.assert_array_equal(got_b, rows[[1, 4, 5]])
    assert (src == tx.sock.getsockname()[1]).all()


def test_wrong_lengths_are_reported_not_cut_silently():
    rx, _, addr = pair()
    raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for size in (L - 1, L, L + 1, 1000):
        raw.sendto(bytes(size), addr)
    _, lens, _ = drain(rx, 4)
    assert lens.tolist() == [L - 1, L, L + 1, L + 1]  # too long: row_len + 1


def test_empty_send_and_nothing_waiting():
    rx, tx, (host, port) = pair()
    assert tx.send(numbered(1), np.array([], np.int64), np.array([ipv4(host)], np.uint32),
                   np.array([port], np.uint16)).done == 0
    assert rx.recv() == 0


def test_bad_row_index_is_an_error_not_a_crash():
    _, tx, (host, port) = pair()
    with pytest.raises(IndexError):
        tx.send(numbered(2), np.array([0, 2]), np.array([ipv4(host)], np.uint32),
                np.array([port], np.uint16))


def test_impaired_socket_sends_each_row_through_its_impairment():
    rx, _, (host, port) = pair()
    imp = ImpairedSocket(make_socket(("127.0.0.1", 0)), Impairment(loss=0.5, seed=1))
    tx = BatchSocket(imp, L)
    tx.send(numbered(200), np.arange(200), np.array([ipv4(host)], np.uint32),
            np.array([port], np.uint16))
    got, _, _ = drain(rx, 200 - imp.counts["dropped"])
    assert 0 < imp.counts["dropped"] < 200 and len(got) == 200 - imp.counts["dropped"]



def test_impaired_batch_leaves_as_one_batch_with_duplicates_after_their_originals():
    """Send fates are drawn per batch: what goes is one sendmmsg (not one sendto per row),
    and a duplicate follows its original."""
    rx, _, (host, port) = pair()
    imp = ImpairedSocket(make_socket(("127.0.0.1", 0)), Impairment(dup=0.3, seed=3))
    tx = BatchSocket(imp, L)
    calls = []
    real = imp.sendto
    imp.sendto = lambda *a: calls.append(a) or real(*a)
    res = tx.send(numbered(300), np.arange(300), np.array([ipv4(host)], np.uint32),
                  np.array([port], np.uint16))
    assert res.done == 300 and not calls  # no per-row Python sends
    c = imp.counts
    assert c["dropped"] == 0 and c["duplicated"] > 0 and c["reordered"] == 0
    got, _, _ = drain(rx, 300 + c["duplicated"])
    ids = got[:, :4].copy().view(">u4").ravel()
    assert len(ids) == 300 + c["duplicated"]
    assert (np.diff(ids.astype(np.int64)) >= 0).all() and set(ids.tolist()) == set(range(300))


def test_reordering_alone_sends_a_batch_as_an_unimpaired_socket_does():
    """Reordering acts on arrival: a send through such a socket draws no fates (the
    instrument's cost is paid only where it acts)."""
    rx, _, (host, port) = pair()
    imp = ImpairedSocket(make_socket(("127.0.0.1", 0)), Impairment(reorder=0.3, seed=3))
    imp.fates = lambda k: pytest.fail("fates drawn for a send under reordering alone")
    tx = BatchSocket(imp, L)
    res = tx.send(numbered(100), np.arange(100), np.array([ipv4(host)], np.uint32),
                  np.array([port], np.uint16))
    assert res.done == 100
    got, _, _ = drain(rx, 100)
    assert got[:, :4].copy().view(">u4").ravel().tolist() == list(range(100))


def fill(b, first, k, stamp=0.0):
    """Put arrivals ``first``.. ``first + k - 1`` (numbered rows) in ``b``'s receive arrays, as
    if one receive had just brought them."""
    b.data[:k] = numbered(first + k)[first:]
    b.lens[:k], b.ips[:k], b.ports[:k], b.stamps[:k] = L, 1, 2, stamp
    return k


def ids(rows):
    return rows[:, :4].copy().view(">u4").ravel().astype(np.int64)


def hold_back(b, k, now, offset=0.0):
    """What recv() does with ``k`` rows it received through ``b``'s ImpairedSocket (the same
    C code), at a time of the test's choosing: the count of rows out."""
    imp = b.sock
    imp.make_room(k, L)
    return _batchio.reorder(b.data, L, b.lens, b.ips, b.ports, b.stamps, k, b.data.shape[0],
                            imp.queue, imp.imp.delay_s, now, offset)


def test_held_arrivals_follow_the_reordering_law_across_receives_of_any_size():
    """Which arrivals are held: each with probability ``reorder``, across receives of one
    packet to thousands (past the bulk draws' ends); the rest keep their order; the same for
    the same seed."""
    def held(seed):
        imp = ImpairedSocket(socket.socket(socket.AF_INET, socket.SOCK_DGRAM),
                             Impairment(reorder=0.05, delay_s=100.0, seed=seed))
        b = BatchSocket(imp, L)
        first, kept = 0, []
        for k in [1, 3, 16_000, 0, 700, 1, 9_000] * 20:
            got = hold_back(b, fill(b, first, k), time.monotonic())
            kept.append(ids(b.data[:got]))
            first += k
        imp.sock.close()
        kept = np.concatenate(kept)
        assert (np.diff(kept) > 0).all() and imp.held == first - kept.size
        return np.setdiff1d(np.arange(first), kept), imp.counts["reordered"]

    late, count = held(7)
    assert count == late.size and abs(late.size / (25_705 * 20) - 0.05) < 0.003
    assert (held(7)[0] == late).all() and not np.array_equal(held(8)[0], late)


def test_held_arrivals_come_out_a_delay_after_the_kernel_received_them():
    """Reordering holds arrivals back at the receiver, as netem's delay does: a held row comes
    out of recv() ``delay_s`` after its kernel arrival time (not after the receiver first
    looked), after what arrived with it, and select() wakes for it."""
    imp = ImpairedSocket(make_socket(("127.0.0.1", 0)),
                         Impairment(reorder=0.3, delay_s=0.05, seed=3))
    stamping_on_arrival(imp.sock)
    rx = BatchSocket(imp, L)
    _, tx, _ = pair()
    host, port = imp.sock.getsockname()
    tx.send(numbered(300), np.arange(300), np.array([ipv4(host)], np.uint32),
            np.array([port], np.uint16))
    time.sleep(0.03)  # the receiver looks late: the delay still runs from the arrival
    t0 = time.monotonic()
    first, _, _ = drain(rx, 300, tries=5)
    held = imp.counts["reordered"]
    assert 0 < held < 300 and len(first) == 300 - held
    assert rx.wait_limit(1.0) <= 0.021  # due 50 ms after arrival, 30 ms of it passed
    assert rx.wait(1.0) and time.monotonic() - t0 < 0.5  # woke for them, not at 1 s
    late, _, _ = drain(rx, held, tries=5)
    assert len(late) == held and not imp.held and not rx.has_due()
    ids = np.concatenate([first, late])[:, :4].copy().view(">u4").ravel()
    assert sorted(ids.tolist()) == list(range(300))
    assert (np.diff(ids[:len(first)].astype(np.int64)) > 0).all()  # the rest stay in order


def test_impairment_rejects_a_negative_delay():
    with pytest.raises(ValueError, match="delay"):
        Impairment.parse("reorder=0.1,delay=-1")


def grads(chunks, bits, rnd=0, n=4):
    k = len(chunks)
    return (np.full(k, rnd), np.asarray(chunks), np.asarray(bits, np.uint64),
            np.ones(k), np.zeros(k), np.ones((k, n), np.int32))


def test_batch_verdicts_follow_arrival_order():
    agg = ChunkAggregator(2, 4, 2, SumApply())
    done, v = agg.offer_batch(*grads([0, 0, 0, 1, 0], [1, 1, 2, 1, 1]))
    assert done == 5
    assert v.tolist()[:3] == [0, DUPLICATE, COMPLETED]  # accepted, duplicate, completed
    assert v[4] == ANSWER_LATE  # a late copy after completion in the same batch
    assert np.frombuffer(agg.result(0), ">i4").tolist() == [2] * 4


def test_batch_stops_before_a_second_completion_of_one_chunk():
    """Round r completes and round r+1 of the same chunk follows in one batch: the batch stops
    there, so the RESULT of round r is taken before its sums are reused."""
    agg = ChunkAggregator(1, 4, 1, SumApply())
    rounds = np.array([0, 1])
    done, v = agg.offer_batch(rounds, np.array([0, 0]), np.array([1, 1], np.uint64),
                              np.ones(2), np.zeros(2), np.array([[1] * 4, [5] * 4], np.int32))
    assert done == 1 and v.tolist() == [COMPLETED]
    assert np.frombuffer(agg.result(0), ">i4").tolist() == [1] * 4
    done, v = agg.offer_batch(rounds[1:], np.array([0]), np.array([1], np.uint64),
                              np.ones(1), np.zeros(1), np.array([[5] * 4], np.int32))
    assert done == 1 and v.tolist() == [COMPLETED]
    assert np.frombuffer(agg.result(0), ">i4").tolist() == [5] * 4


def grad_rows(chunks, bits, rounds, flags=0, job=1, n=4, seed=0):
    """GRAD packets in wire format, one row each, with random payloads."""
    k = len(chunks)
    hdrs = np.zeros(k, wire.HEADER_DTYPE)
    hdrs["type"], hdrs["flags"], hdrs["job"] = wire.TYPE_GRAD, flags, job
    hdrs["round"], hdrs["chunk"], hdrs["bitmap"] = rounds, chunks, bits
    hdrs["count"] = [bin(b).count("1") for b in bits]
    payload = np.random.default_rng(seed).integers(-2**31, 2**31, (k, n), dtype=np.int64)
    return wire.pack_batch(hdrs, payload.astype(np.int32), n=n)


def offered_both_ways(rows, n=4, workers=3, chunks=4):
    """(offer_rows', offer_batch's) verdicts, sums and counters over the same packets, each
    on an aggregator of its own, called until every row is taken (both stop early alike)."""
    out = []
    for by_rows in (True, False):
        agg = ChunkAggregator(chunks, n, workers, SumApply())
        verdicts, start, k = [], 0, rows.shape[0]
        recs = wire.records(rows, n)
        hdr = recs["hdr"]
        while start < k:
            if by_rows:
                done, v = agg.offer_rows(rows, start, k, np.full(k, rows.shape[1], np.int32),
                                         1)
            else:
                sel = slice(start, k)
                done, v = agg.offer_batch(hdr["round"][sel], hdr["chunk"][sel],
                                          hdr["bitmap"][sel], hdr["count"][sel],
                                          (hdr["flags"][sel] & wire.FLAG_RETX) != 0,
                                          recs["payload"][sel])
            verdicts += v.tolist()
            start += done
        out.append((verdicts, agg.sums.copy(), agg.results.copy(), dict(agg.counters),
                    agg.result_retx.copy()))
    return out


def test_ps_rows_follow_the_same_rules_as_parsed_fields():
    """offer_rows reads the wire format itself: the same verdicts, sums, RESULT payloads
    (negative and wrapped values too), RETX marks and counters as the numpy path, over
    duplicates, late copies, stale and future rounds, bad chunks, bitmaps and counts, and a
    next round of a chunk completed in the same call (both stop there)."""
    chunks = [0, 0, 1, 0, 2, 0, 1, 1, 3, 9, 2, 2, 0, 3, 3, 0]
    bits = [1, 1, 2, 2, 1, 4, 1, 4, 1, 1, 8, 2, 1, 2, 4, 2]
    rounds = [0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0]
    flags = [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1]
    rows = grad_rows(chunks, bits, rounds, flags)
    rows[8, 12:14] = [0, 7]  # slot: not read by the rules
    rows[4, 15] = 2  # count 2 with one bit set: dropped
    (v1, s1, r1, c1, x1), (v2, s2, r2, c2, x2) = offered_both_ways(rows)
    assert v1 == v2 and COMPLETED in v1 and DUPLICATE in v1 and ANSWER_LATE in v1
    assert (s1 == s2).all() and (r1 == r2).all() and c1 == c2 and (x1 == x2).all()
    assert c1["drop_bad_chunk"] == 1 and c1["drop_bad_count"] == 1 and x1[0]


def test_ps_rows_leave_any_other_batch_untouched():
    """One row that is not a plain GRAD of this job (another job, a switch's aggregate, an
    OVERFLOW, a control packet, a short one) sends the whole batch back to the numpy path,
    with nothing summed or counted."""
    n = 4
    for spoil in ("job", "aggregated", "overflow", "type", "length"):
        rows = grad_rows([0, 1, 2], [1, 1, 1], [0, 0, 0])
        lens = np.full(3, rows.shape[1], np.int32)
        if spoil == "job":
            rows[2, 2:4] = [0, 2]
        elif spoil == "aggregated":
            rows[2, 1] = wire.FLAG_AGGREGATED
        elif spoil == "overflow":
            rows[2, 1] = wire.FLAG_OVERFLOW | wire.FLAG_RETX
        elif spoil == "type":
            rows[2, 0] = wire.TYPE_ACK
        else:
            lens[2] -= 1
        agg = ChunkAggregator(3, n, 1, SumApply())
        assert agg.offer_rows(rows, 0, 3, lens, 1) is None, spoil
        assert not agg.sums.any() and not agg.counters and (agg.completed == -1).all()
        assert agg.offer_rows(rows, 0, 2, lens, 1)[0] == 2  # the rows before it are fine
    with pytest.raises(ValueError, match="row_len"):
        _batchio.grads(rows[:, :-1], rows.shape[1] - 1, 0, 3, lens, 1, 1, 1, False,
                       *agg._state(np.zeros(3, np.int8)), np.zeros(3, np.uint32))


def test_parse_batch_flags_bad_packets():
    good = wire.pack(wire.InaHeader(type=1, job=1, round=0, chunk=0, bitmap=1),
                     np.zeros(wire.DEFAULT_N, np.int32))
    rows = np.frombuffer(good * 3, np.uint8).reshape(3, -1).copy()
    rows[1, 0] = 9  # type
    rows[2, 1] = 0x80  # flags
    lens = np.full(3, len(good), np.int32)
    _, ok = wire.parse_batch(rows, lens)
    assert ok.tolist() == [True, False, False]
    lens[0] -= 1
    assert not wire.parse_batch(rows, lens)[1][0]


def test_held_queue_keeps_arrival_order_across_receives_and_growth():
    """The held queue is filled straight from each receive and emptied from its front: rows
    held over many receives (more than its first allocation) come out after the receive's
    own rows, oldest first, each no earlier than its due time (its kernel stamp plus the
    delay), and a stamp that reads earlier than the one before it (the clocks' offset
    jitters) waits for it instead of jumping the queue."""
    imp = ImpairedSocket(make_socket(("127.0.0.1", 0)),
                         Impairment(reorder=0.5, delay_s=1.0, seed=1))
    b = BatchSocket(imp, L)
    now, offset, first = 100.0, 50.0, 0

    def receive(k, at):
        return ids(b.data[:hold_back(b, k, at, offset)])

    for r in range(40):  # 40 receives of 100 rows, ~50 held each: past 1024 rows of room
        fill(b, first, 100, now + offset + 0.001 * r)
        b.stamps[0] -= 1e-6 if r else 0.0  # jitter: earlier than the previous receive's
        assert (np.diff(receive(100, now + 0.001 * r + 0.0005)) > 0).all()
        first += 100
    held = imp.held
    assert held == imp.counts["reordered"] and 1500 < held < 2500
    assert imp.next_due() == pytest.approx(now + 1.0)
    assert not receive(0, now + 0.5).size  # nothing due before its delay
    fill(b, first, 5, now + offset + 1.0)
    early = receive(5, now + 1.0105)  # receives 0..10 are due (and the new ones kept)
    new = early[early >= first]
    assert new.size and (np.diff(new) > 0).all() and (early[:new.size] == new).all()
    out = early[new.size:]
    assert out.size and (out < 1100).all() and (np.diff(out) > 0).all()
    out = np.concatenate([out, receive(0, now + 1.0105)])
    assert out.size + imp.held == imp.counts["reordered"] and (out < 1100).all()
    rest = receive(0, now + 3)
    assert (np.diff(np.concatenate([out, rest[rest < first]])) > 0).all()
    assert not imp.held and imp.next_due() == np.inf


def test_reorder_refuses_a_call_without_room():
    """The C side trusts nothing: a queue or a list of held arrivals too short for the
    receive is an error for reorder(), and recv() takes nothing from the socket until the
    caller made room (-1), so no arrival is lost or written past an array."""
    imp = ImpairedSocket(make_socket(("127.0.0.1", 0)), Impairment(reorder=0.5, seed=1))
    b = BatchSocket(imp, L)
    fill(b, 0, 100)
    with pytest.raises(ValueError, match="no room"):  # no queue allocated yet
        _batchio.reorder(b.data, L, b.lens, b.ips, b.ports, b.stamps, 100, b.data.shape[0],
                         imp.queue, 0.0, 1.0, 0.0)
    imp.make_room(100, L)
    with pytest.raises(ValueError, match="no room"):  # room for 100 rows only
        _batchio.reorder(b.data, L, b.lens, b.ips, b.ports, b.stamps, 16_000,
                         b.data.shape[0], imp.queue, 0.0, 1.0, 0.0)
    _, tx, _ = pair()
    host, port = imp.sock.getsockname()
    tx.send(numbered(10), np.arange(10), np.array([ipv4(host)], np.uint32),
            np.array([port], np.uint16))
    args = (b.fd, b.data, L, GSO_SEGMENTS, b.lens, b.ips, b.ports, b.stamps)
    assert _batchio.recv(*args, imp.queue, 0.0) == -1  # room for 100 of 16384 rows
    with pytest.raises(ValueError, match="needs stamps"):
        _batchio.recv(*args[:-1], None, imp.queue, 0.0)
    with pytest.raises(TypeError, match="queue is"):
        _batchio.recv(*args, imp.queue[:3], 0.0)
    got, _, _ = drain(b, 10)  # recv() makes the room: nothing was taken before
    assert len(got) + imp.held == 10
    imp.state[HEAD] = -1  # no room mends this: an error, not -1 for ever
    with pytest.raises(ValueError, match="out of range"):
        _batchio.recv(*args, imp.queue, 0.0)


def ps_state(chunks, n):
    """The arrays _batchio.results takes for one PS, as _PsRound keeps them."""
    return (np.zeros(chunks, bool), np.zeros((chunks, n), np.int32), np.full(chunks, np.inf),
            np.zeros(chunks, np.int32), np.arange(chunks, dtype=np.float64),
            np.arange(chunks) < 2)


def test_worker_results_take_the_usual_rows_and_leave_every_other_one():
    n, job, rnd = 4, 7, 3
    ps_ips = np.array([ipv4("10.0.0.1"), ipv4("10.0.0.2")], np.uint32)
    ps_ports = np.array([5000, 6000], np.uint16)
    states = (ps_state(8, n), ps_state(5, n))
    states[0][0][5] = True  # chunk 5 of PS 0 already done
    states[0][3][6] = 1  # chunk 6 of PS 0 was resent
    # (source ip, port, type, flags, job, round, chunk, length); True: taken in C
    rows = [
        (0, 5000, wire.TYPE_RESULT, 0, job, rnd, 1, None, True),
        (0, 5000, wire.TYPE_RESULT, wire.FLAG_AGGREGATED, job, rnd, 3, None, True),
        (1, 6001, wire.TYPE_RESULT, 0, job, rnd, 4, None, True),  # PS 1's host, other port
        (0, 5000, wire.TYPE_RESULT, 0, job, rnd, 1, None, False),  # a duplicate
        (0, 5000, wire.TYPE_RESULT, wire.FLAG_RETX, job, rnd, 2, None, False),
        (0, 5000, wire.TYPE_RESULT, 0, job + 1, rnd, 0, None, False),  # another job's
        (0, 5000, wire.TYPE_RESULT, 0, job, rnd - 1, 0, None, False),  # a stale round
        (0, 5000, wire.TYPE_RESULT, 0, job, rnd, 8, None, False),  # past the shard
        (0, 5000, wire.TYPE_RESULT, 0, job, rnd, 5, None, False),  # done already
        (0, 5000, wire.TYPE_RESULT, 0, job, rnd, 6, None, False),  # resent
        (0, 5000, wire.TYPE_ACK, 0, job, rnd, 0, None, False),
        (0, 5000, wire.TYPE_RESULT, 0, job, rnd, 0, 20, False),  # too short
        (None, 5000, wire.TYPE_RESULT, 0, job, rnd, 0, None, False),  # unknown source
        (0, 5000, wire.TYPE_RESULT, 0x80, job, rnd, 0, None, False),  # unknown flag
        (0, 5000, wire.TYPE_RESULT, 0, job, rnd, 0, None, True),
    ]
    k, width = len(rows), wire.packet_len(n)
    data = np.zeros((k, width), np.uint8)
    lens = np.full(k, width, np.int32)
    ips, ports = np.zeros(k, np.uint32), np.zeros(k, np.uint16)
    for i, (src, port, typ, flags, j, r, chunk, length, _) in enumerate(rows):
        hdr = wire.headers(1, typ, j, r, np.array([chunk]), np.array([0]), 1, flags)
        data[i] = wire.pack_batch(hdr, np.array([[-i, i, 1 << 30, -(1 << 31)]]), n)[0]
        lens[i] = length or width
        ips[i] = ipv4("10.9.9.9") if src is None else ps_ips[src]
        ports[i] = port
    slow, stats = np.full(k, 7, np.uint8), np.zeros((2, _batchio.N_RESULT_STATS))
    left = _batchio.results(data, width, k, lens, ips, ports, ps_ips, ps_ports, job, rnd, n,
                            states, slow, stats)
    assert slow.tolist() == [0 if row[-1] else 1 for row in rows]
    assert left == int(slow.sum())
    done0, results0, deadline0 = states[0][:3]
    assert np.flatnonzero(done0).tolist() == [0, 1, 3, 5]
    assert results0[1].tolist() == [0, 0, 1 << 30, -(1 << 31)]  # the first of the duplicates
    assert results0[0].tolist() == [-14, 14, 1 << 30, -(1 << 31)]
    assert np.isinf(deadline0[[0, 1, 3]]).all()
    assert states[1][1][4].tolist() == [-2, 2, 1 << 30, -(1 << 31)]
    # PS 0: chunks 0 and 1 were sent before the first RESULT (at 0 and 1), chunk 3 after (3)
    assert stats[0].tolist() == [3, 3, 0.0, 1.0, 3.0, 3.0]
    assert stats[1].tolist() == [1, 4, np.inf, -np.inf, 4.0, 4.0]


def test_worker_results_name_arrays_that_do_not_fit():
    n = 4
    width = wire.packet_len(n)
    data, lens = np.zeros((1, width), np.uint8), np.full(1, width, np.int32)
    ips, ports = np.zeros(1, np.uint32), np.zeros(1, np.uint16)
    good = ps_state(8, n)
    short = (*good[:2], np.zeros(3), *good[3:])
    args = (data, width, 1, lens, ips, ports, ips, ports, 1, 0, n)
    out = (np.zeros(1, np.uint8), np.zeros((1, _batchio.N_RESULT_STATS)))
    with pytest.raises(ValueError, match="states\\[0\\] do not match one chunk count"):
        _batchio.results(*args, (short,), *out)
    with pytest.raises(ValueError, match="not a tuple of 6 arrays"):
        _batchio.results(*args, (good[:5],), *out)
    with pytest.raises(ValueError, match="row_len"):
        _batchio.results(data, width + 4, *args[2:], (good,), *out)
    assert _batchio.results(*args, (good,), *out) == 1  # and a good call still works


def test_pass_over_marks_waiting_chunks_below_the_top_once():
    done = np.array([1, 1, 0, 1, 0, 0, 1, 0], bool)
    passed = np.full(8, np.inf)
    passed[5] = 1.0  # passed before: keeps its time
    assert _batchio.pass_over(done, passed, 0, 7, 2.0) == (2, 2)  # chunks 2 and 4
    assert passed.tolist() == [np.inf, np.inf, 2.0, np.inf, 2.0, 1.0, np.inf, np.inf]
    assert _batchio.pass_over(done, passed, 2, 7, 3.0) == (2, 0)  # nothing new
    done[:] = True
    assert _batchio.pass_over(done, passed, 2, 0, 0.0) == (8, 0)  # the low end moves only
    with pytest.raises(ValueError, match="top <= 8 chunks"):
        _batchio.pass_over(done, passed, 0, 9, 0.0)


def test_fill_writes_payloads_as_numpy_quantizes_them():
    """_batchio.fill: int32 copied, float32 as rint(x * 2**e) (ties to even), big-endian, the
    last chunk padded with zeros, headers untouched; a short source is refused by name."""
    n, chunks = 5, 3
    rows = np.full((chunks, wire.packet_len(n)), 7, np.uint8)
    x = np.array([0.5, 1.5, -2.5, 1e-3, -7.25, 3.0, 2.0**-30, 100.0, -0.5, 1.0, 2.5, 0.75],
                 np.float32)
    _batchio.fill(rows, rows.shape[1], chunks, x, 1, 0, x.size, 3)
    got = rows[:, wire.HEADER_LEN:].copy().view(">i4").reshape(-1)
    want = np.zeros(chunks * n, np.int32)
    want[:x.size] = np.rint(x.astype(np.float64) * 8)
    assert (got == want).all() and (rows[:, :wire.HEADER_LEN] == 7).all()
    ints = np.arange(-4, 4, dtype=np.int32)
    _batchio.fill(rows, rows.shape[1], 2, ints, 0, 2, 6, 0)  # values [2, 8) into 2 rows
    got = rows[:2, wire.HEADER_LEN:].copy().view(">i4").reshape(-1)
    assert got.tolist() == [-2, -1, 0, 1, 2, 3, 0, 0, 0, 0]
    with pytest.raises(ValueError, match="src holds 32 bytes"):
        _batchio.fill(rows, rows.shape[1], 2, ints, 0, 4, 6, 0)
    _batchio.fill(rows, rows.shape[1], 0, ints, 0, 8, 0, 0)  # nothing to write, nothing read


@pytest.mark.parametrize("exp", [-126, -40, -3, 0, 7, 29, 127, 128, 160])
def test_fill_quantizes_long_vectors_exactly_at_every_exponent(exp):
    """The vector path (8 values at a time, float32 products) and the scalar rest agree with
    rint of the double product, ties to even, at every exponent the scale can take; past
    float32's exponent range (128, 160: a subnormal maximum) the double path is taken."""
    rng = np.random.default_rng(exp + 200)
    n, chunks = 37, 5  # 185 values: 23 vectors of 8 and a rest of 1, in rows of 37
    limit = (2**31 - 1) / 6  # the largest |x| * 2**exp the agreed scale allows (6 workers)
    x = (rng.uniform(-1, 1, chunks * n) * limit * 2.0**-exp).astype(np.float32)
    ties = np.array([0.5, 1.5, -2.5, 3.5]) * 2.0**-exp  # to even, where float32 holds them
    x[:4] = ties if exp < 148 else 0.0
    _batchio.fill(rows := np.zeros((chunks, wire.packet_len(n)), np.uint8), rows.shape[1],
                  chunks, x, 1, 0, x.size, exp)
    got = rows[:, wire.HEADER_LEN:].copy().view(">i4").reshape(-1)
    want = np.rint(x.astype(np.float64) * 2.0**exp)
    assert got[:4].tolist() == ([0, 2, -2, 4] if exp < 148 else [0, 0, 0, 0])
    assert np.array_equal(got, want.astype(np.int32))


def test_absmax_is_the_largest_magnitude_and_inf_for_nonfinite():
    x = np.random.default_rng(1).standard_normal(1003).astype(np.float32)
    assert _batchio.absmax(x) == float(np.abs(x).max())
    x[17] = -1e30
    assert _batchio.absmax(x) == float(np.float32(1e30))
    assert _batchio.absmax(np.zeros(0, np.float32)) == 0.0
    for bad in (np.nan, -np.inf, np.inf):
        y = x.copy()
        y[500] = bad
        assert _batchio.absmax(y) == np.inf


@pytest.mark.parametrize("exp", [-160, -31, 0, 12])
def test_dequantize_rounds_once_from_the_exact_double(exp):
    s = np.random.default_rng(2).integers(-2**31, 2**31 - 1, 1003, dtype=np.int64)
    s = s.astype(np.int32)
    out = np.empty(1001, np.float32)  # the first 1001 sums: a padded source is longer
    _batchio.dequantize(s, out, exp)
    assert np.array_equal(out, (s[:1001].astype(np.float64) * 2.0**exp).astype(np.float32))
    with pytest.raises(ValueError, match="src holds"):
        _batchio.dequantize(s[:10], out, exp)
