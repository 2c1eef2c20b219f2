"""A parameter server's packet engine: sums its shard's GRAD packets, steps the optimizer,
answers.  ``python -m host_stack.ina.ps`` runs one as a process; ``ps_versions.VersionedPs``
runs one face per plan version over a shared aggregator.

Behaviour (DESIGN.md section 4, rules in host_stack/ina/aggregator.py): when a chunk completes the
PS sends the RESULT to every worker (unicast copies; ``result_targets`` can name a switch's
multicast address instead); a GRAD/RETX for a completed chunk gets a unicast RESULT back to its
sender (RETX set as the request had it); a switch aggregate flagged OVERFLOW is dropped and
the workers in its bitmap get a CTRL_OVERFLOW_NACK so they resend it as RETX (summed here in
int64).  Malformed packets, other jobs and unexpected types are counted and dropped; nothing a
packet carries stops the PS.

Packets are handled a batch at a time (host_stack/ina/batchio.py): one recvmmsg, the accept
rules in C over the batch, one optimizer step over every chunk it completed, one sendmmsg of
their RESULTs (as UDP GSO batches towards loopback workers).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np

from host_stack.ina import wire
from host_stack.ina.addresses import Address
from host_stack.ina.aggregator import ANSWER_LATE, COMPLETED, ChunkAggregator, run_or_index
from host_stack.ina.batchio import BatchSocket, dotted, ipv4


class PsServer:
    """The packet loop of one PS over an already bound socket, a batch of packets at a time."""

    def __init__(self, sock, job: int, n: int, aggregator: ChunkAggregator,
                 workers: list[Address], result_targets: list[Address] | None = None,
                 gso: str = "loopback") -> None:
        self.sock = sock
        self.io = BatchSocket(sock, wire.packet_len(n), gso=gso)
        self.job = job
        self.n = n
        self.agg = aggregator
        self.workers = workers
        self.targets = list(workers) if result_targets is None else result_targets
        self.counters: Counter[str] = Counter()
        self.stop = False
        self.checkpoint_requested = False
        self.zeros = bytes(4 * n)

    @property
    def targets(self) -> list[Address]:
        """Where each completed RESULT goes (every worker, or a switch that replicates it)."""
        return self._targets

    @targets.setter
    def targets(self, targets: list[Address]) -> None:
        self._targets = list(targets)
        self.target_ips = np.array([ipv4(h) for h, _ in targets], dtype=np.uint32)
        self.target_ports = np.array([p for _, p in targets], dtype=np.uint16)

    def _send_one(self, data: bytes, addr: Address) -> None:
        try:
            self.io.sendto(data, addr)
            self.counters["tx"] += 1
        except BlockingIOError:
            self.counters["tx_buffer_full"] += 1
        except OSError:
            self.counters["tx_error"] += 1

    def _send(self, rows: np.ndarray, idx: np.ndarray, ips: np.ndarray,
              ports: np.ndarray) -> None:
        res = self.io.send(rows, idx, ips, ports)
        self.counters["tx"] += res.done - res.errors
        self.counters["tx_error"] += res.errors
        self.counters["tx_buffer_full"] += len(idx) - res.done

    def _hello_reply(self, addr: Address) -> None:
        self._send_one(wire.pack_fast(wire.TYPE_ACK, 0, self.job, 0, 0, wire.CTRL_HELLO_REPLY,
                                      len(self.workers), 0, self.zeros), addr)

    def handle_batch(self, k: int) -> None:
        """Process the ``k`` packets ``self.io`` just received."""
        c = self.counters
        c["rx"] += k
        if self._usual_batch(k):
            return
        recs, ok = wire.parse_batch(self.io.data[:k], self.io.lens[:k], self.n)
        hdr = recs["hdr"]
        typ, flags = hdr["type"], hdr["flags"]
        grad = ok & (typ == wire.TYPE_GRAD) & (hdr["job"] == self.job)
        retx = (flags & wire.FLAG_RETX) != 0
        self._count_others(recs, ok)
        c["rx_retx"] += int((grad & retx).sum())
        c["rx_grad"] += int((grad & ~retx).sum())
        if (flags & wire.FLAG_AGGREGATED).any():
            c["rx_aggregated"] += int((grad & ((flags & wire.FLAG_AGGREGATED) != 0)).sum())
        overflow = grad & ((flags & wire.FLAG_OVERFLOW) != 0)
        for i in np.flatnonzero(overflow):
            self._overflow(hdr[i])
        rows = np.flatnonzero(grad & ~overflow)
        while rows.size:
            done, verdicts = self.agg.offer_batch(
                hdr["round"][rows], hdr["chunk"][rows], hdr["bitmap"][rows],
                hdr["count"][rows], retx[rows], recs["payload"][rows])
            self._answer(wire.take(recs, rows[:done]), verdicts, rows[:done])
            rows = rows[done:]

    def _usual_batch(self, k: int) -> bool:
        """This job's GRADs (or their RETXs) only, the PS's usual receive: the rules run on
        the rows in C (``offer_rows``), and only the answers are built in numpy; False,
        with nothing done, for any other batch."""
        data, start = self.io.data, 0
        while start < k:
            taken = self.agg.offer_rows(data, start, k, self.io.lens, self.job)
            if taken is None:
                return False
            done, verdicts = taken
            self._answer(wire.records(data[start:start + done], self.n), verdicts,
                         np.arange(start, start + done))
            start += done
        resent = int(np.count_nonzero(data[:k, 1] & wire.FLAG_RETX))
        self.counters["rx_retx"] += resent
        self.counters["rx_grad"] += k - resent
        return True

    def _count_others(self, recs: np.ndarray, ok: np.ndarray) -> None:
        """Count (and answer HELLOs among) what in a batch is not this job's GRADs."""
        c = self.counters
        hdr = recs["hdr"]
        typ = hdr["type"]
        c["drop_malformed"] += int(len(ok) - ok.sum())
        hello = ok & (typ == wire.TYPE_ACK) & (hdr["slot"] == wire.CTRL_HELLO)
        mine = ok & (hdr["job"] == self.job)
        c["drop_wrong_job"] += int((ok & ~mine).sum())
        # tell a worker of another job which job this PS serves (clear error there)
        for i in np.flatnonzero(hello):
            c["hello"] += int(mine[i])
            self._hello_reply((dotted(self.io.ips[i]), int(self.io.ports[i])))
        c["drop_control_unknown"] += int((mine & (typ == wire.TYPE_ACK) & ~hello).sum())
        c["drop_unexpected_type"] += int((mine & (typ == wire.TYPE_RESULT)).sum())

    def _overflow(self, hdr: np.void) -> None:
        """A switch aggregate flagged OVERFLOW: NACK the workers in its bitmap."""
        self.counters["overflow_aggregate"] += 1
        bitmap = int(hdr["bitmap"])
        for rank, waddr in enumerate(self.workers):
            if bitmap >> rank & 1:
                self._send_one(wire.pack_fast(wire.TYPE_ACK, wire.FLAG_OVERFLOW, self.job,
                                              int(hdr["round"]), int(hdr["chunk"]),
                                              wire.CTRL_OVERFLOW_NACK, 0, 1 << rank,
                                              self.zeros), waddr)
                self.counters["overflow_nack_sent"] += 1

    def _answer(self, recs: np.ndarray, verdicts: np.ndarray, rows: np.ndarray) -> None:
        """RESULTs for what completed (to every target) and for late requests (unicast)."""
        hdr = recs["hdr"]
        done = verdicts == COMPLETED
        if done.any():
            # RETX on a RESULT: a retransmission went into it (or, below, it answers one),
            # so its timing says nothing about the network; workers take no RTT sample.
            chunks = hdr["chunk"][done].astype(np.int64)
            flags = np.where(self.agg.result_retx[chunks], wire.FLAG_RETX, 0)
            packets = self._results(chunks, hdr["round"][done], hdr["slot"][done], flags)
            # grouped by target, so each target's RESULTs can leave as one GSO batch
            m = len(chunks)
            self._send(packets, np.tile(np.arange(m), len(self._targets)),
                       np.repeat(self.target_ips, m), np.repeat(self.target_ports, m))
            self.counters["result_multicast"] += len(chunks)
        late = verdicts == ANSWER_LATE
        if late.any():
            # a switch's aggregate that lost the race to RETXs: its source is the switch, and
            # its workers already got the RESULT when the chunk completed
            switch = late & ((hdr["flags"] & wire.FLAG_AGGREGATED) != 0)
            self.counters["late_aggregate_ignored"] += int(switch.sum())
            late &= ~switch
            # RETX as the request had it: an answer to a late original tells its worker that
            # the original was not lost (its resend, if any, was spurious: reordering)
            chunks = hdr["chunk"][late].astype(np.int64)
            packets = self._results(chunks, hdr["round"][late], hdr["slot"][late],
                                    hdr["flags"][late] & wire.FLAG_RETX)
            self._send(packets, np.arange(len(chunks)), self.io.ips[rows[late]],
                       self.io.ports[rows[late]])
            self.counters["result_unicast"] += len(chunks)

    def _results(self, chunks: np.ndarray, rounds: np.ndarray, slots: np.ndarray,
                 flags: np.ndarray | int) -> np.ndarray:
        hdrs = wire.headers(len(chunks), wire.TYPE_RESULT, self.job, rounds, chunks, slots,
                            self.agg.all_bits, flags, len(self.workers))
        return wire.pack_raw(hdrs, self.agg.results[run_or_index(chunks)])

    def poll(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for packets and handle all that are queued; True if any."""
        if not self.io.wait(timeout):
            return False
        got = False
        while k := self.io.recv():
            got = True
            self.handle_batch(k)
        return got

    def serve(self, idle_exit_s: float | None = None, on_idle=None) -> None:
        """Loop until ``stop`` is set or nothing arrived for ``idle_exit_s`` seconds."""
        serve_until(self, idle_exit_s, on_idle)

    def stats(self) -> dict[str, int]:
        return shard_stats(self.counters, self.agg)


def serve_until(server, idle_exit_s: float | None, on_tick=None, poll_s: float = 0.1) -> None:
    """A PS's loop (PsServer, or VersionedPs over several): poll, then ``on_tick``, until
    ``server.stop`` is set or nothing arrived for ``idle_exit_s`` seconds."""
    last = time.monotonic()
    while not server.stop:
        if server.poll(poll_s):
            last = time.monotonic()
        elif idle_exit_s is not None and time.monotonic() - last > idle_exit_s:
            server.counters["idle_exit"] += 1
            return
        if on_tick is not None:
            on_tick()


def shard_stats(counters: Counter[str], agg: ChunkAggregator) -> dict[str, int]:
    """A PS's counters, its aggregator's and the rounds every chunk of its shard completed."""
    out = {k: v for k, v in counters.items() if v}
    out.update({f"agg_{k}": v for k, v in agg.counters.items()})
    done = agg.completed
    out["rounds_completed"] = int(done.min()) + 1 if done.size else 0
    return out


def checkpoint(path: Path, ps: str, job: int, agg: ChunkAggregator, apply) -> Path:
    """Write the shard's state atomically (tmp file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, completed_round=agg.completed, ps=np.array(ps), job=np.array(job),
             **apply.state())
    tmp.replace(path)
    return path
