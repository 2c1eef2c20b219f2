"""PTF: in-network aggregation of GRAD packets (DESIGN.md section 4)."""

from __future__ import annotations

import numpy as np
from ina_base import PS1, PS2, WORKERS, InaTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from host_stack.ina import wire

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
JOB = 7


def bits(ranks) -> int:
    return sum(1 << r for r in ranks)


class FanInAggregation(InaTest):
    """fan-in k: k-1 contributions are absorbed, the k-th produces ONE packet with the sums."""

    fan_in = 0

    def check_fan_in(self):
        self.add_host_routes()
        workers = WORKERS[: self.fan_in]
        self.add_job(JOB, PS1, workers)
        vals = [self.values(seed=r) for r in range(self.fan_in)]
        for rank, w in enumerate(workers):
            self.send(w.port, self.grad(w, PS1, job=JOB, rnd=3, chunk=11, slot=5, rank=rank,
                                        values=vals[rank]))
            if rank < self.fan_in - 1:
                self.expect_nothing()
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=JOB, rnd=3, chunk=11, slot=5, count=self.fan_in,
            bitmap=bits(range(self.fan_in)), values=np.sum(vals, axis=0)))])
        self.assert_events(absorbed_drop=self.fan_in - 1, aggregated_out=1)
        # the slot was freed: the same slot serves the next chunk at once
        for rank, w in enumerate(workers):
            self.send(w.port, self.grad(w, PS1, job=JOB, rnd=3, chunk=12, slot=5, rank=rank,
                                        values=vals[0]))
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=JOB, rnd=3, chunk=12, slot=5, count=self.fan_in,
            bitmap=bits(range(self.fan_in)), values=vals[0] * self.fan_in))])
        self.assert_events(absorbed_drop=2 * (self.fan_in - 1), aggregated_out=2)


class FanIn1(FanInAggregation):
    fan_in = 1

    def runTest(self):
        self.check_fan_in()


class FanIn2(FanInAggregation):
    fan_in = 2

    def runTest(self):
        self.check_fan_in()


class FanIn8(FanInAggregation):
    fan_in = 8

    def runTest(self):
        self.check_fan_in()


class DuplicateDropped(InaTest):
    """A contribution whose bit is already in the slot is dropped and counted."""

    def runTest(self):
        self.add_host_routes()
        w1, w2, w3 = WORKERS[:3]
        self.add_job(JOB, PS1, [w1, w2, w3])
        v = [self.values(seed=s) for s in range(3)]
        self.send(w1.port, self.grad(w1, PS1, job=JOB, rnd=1, chunk=0, slot=0, rank=0,
                                     values=v[0]))
        # the same packet again, and again with different values: both duplicates
        self.send(w1.port, self.grad(w1, PS1, job=JOB, rnd=1, chunk=0, slot=0, rank=0,
                                     values=v[0]))
        self.send(w1.port, self.grad(w1, PS1, job=JOB, rnd=1, chunk=0, slot=0, rank=0,
                                     values=v[1]))
        self.send(w2.port, self.grad(w2, PS1, job=JOB, rnd=1, chunk=0, slot=0, rank=1,
                                     values=v[1]))
        self.send(w2.port, self.grad(w2, PS1, job=JOB, rnd=1, chunk=0, slot=0, rank=1,
                                     values=v[1]))
        self.expect_nothing()
        self.send(w3.port, self.grad(w3, PS1, job=JOB, rnd=1, chunk=0, slot=0, rank=2,
                                     values=v[2]))
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=JOB, rnd=1, chunk=0, slot=0, count=3, bitmap=0b111,
            values=v[0] + v[1] + v[2]))])
        self.assert_events(absorbed_drop=2, duplicate_drop=3, aggregated_out=1)


class RetxBypass(InaTest):
    """RETX packets go straight to the PS and do not touch the slot."""

    def runTest(self):
        self.add_host_routes()
        w1, w2 = WORKERS[:2]
        self.add_job(JOB, PS1, [w1, w2])
        v1, v2 = self.values(seed=1), self.values(seed=2)
        self.send(w1.port, self.grad(w1, PS1, job=JOB, rnd=4, chunk=2, slot=1, rank=0,
                                     values=v1, flags=wire.FLAG_RETX))
        self.expect_exactly([(PS1.port, self.forwarded_grad(
            w1, PS1, job=JOB, rnd=4, chunk=2, slot=1, rank=0, values=v1,
            flags=wire.FLAG_RETX))])
        self.send(w1.port, self.grad(w1, PS1, job=JOB, rnd=4, chunk=2, slot=1, rank=0,
                                     values=v1))
        self.expect_nothing()
        # a RETX of a contribution that IS in the slot still bypasses (not a duplicate)
        self.send(w1.port, self.grad(w1, PS1, job=JOB, rnd=4, chunk=2, slot=1, rank=0,
                                     values=v1, flags=wire.FLAG_RETX))
        self.expect_exactly([(PS1.port, self.forwarded_grad(
            w1, PS1, job=JOB, rnd=4, chunk=2, slot=1, rank=0, values=v1,
            flags=wire.FLAG_RETX))])
        self.send(w2.port, self.grad(w2, PS1, job=JOB, rnd=4, chunk=2, slot=1, rank=1,
                                     values=v2))
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=JOB, rnd=4, chunk=2, slot=1, count=2, bitmap=0b11, values=v1 + v2))])
        self.assert_events(retx_bypass=2, absorbed_drop=1, aggregated_out=1)


class CollisionForwardedUnaggregated(InaTest):
    """A slot busy with another chunk of the same (or a newer) round forwards the packet."""

    def runTest(self):
        self.add_host_routes()
        w1, w2 = WORKERS[:2]
        self.add_job(JOB, PS1, [w1, w2])
        v1, v2, v3 = self.values(seed=1), self.values(seed=2), self.values(seed=3)
        self.send(w1.port, self.grad(w1, PS1, job=JOB, rnd=5, chunk=0, slot=3, rank=0,
                                     values=v1))
        self.expect_nothing()
        # same round, another chunk, same slot -> collision
        self.send(w2.port, self.grad(w2, PS1, job=JOB, rnd=5, chunk=64, slot=3, rank=1,
                                     values=v2))
        self.expect_exactly([(PS1.port, self.forwarded_grad(
            w2, PS1, job=JOB, rnd=5, chunk=64, slot=3, rank=1, values=v2))])
        # an OLDER round on a slot held by round 5 -> collision too, never a reclaim
        self.send(w2.port, self.grad(w2, PS1, job=JOB, rnd=4, chunk=0, slot=3, rank=1,
                                     values=v3))
        self.expect_exactly([(PS1.port, self.forwarded_grad(
            w2, PS1, job=JOB, rnd=4, chunk=0, slot=3, rank=1, values=v3))])
        # the slot's own chunk still completes with the right sums
        self.send(w2.port, self.grad(w2, PS1, job=JOB, rnd=5, chunk=0, slot=3, rank=1,
                                     values=v2))
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=JOB, rnd=5, chunk=0, slot=3, count=2, bitmap=0b11, values=v1 + v2))])
        self.assert_events(collision=2, absorbed_drop=1, aggregated_out=1)


class StaleSlotReclaimed(InaTest):
    """A slot left half-full by an older round is claimed by the newer round's packet."""

    def runTest(self):
        self.add_host_routes()
        w1, w2, w3 = WORKERS[:3]
        self.add_job(JOB, PS1, [w1, w2, w3])
        old = [self.values(seed=10 + i) for i in range(3)]
        new = [self.values(seed=20 + i) for i in range(3)]
        for rank, w in enumerate((w1, w2)):  # round 8 never completes (w3's packet lost)
            self.send(w.port, self.grad(w, PS1, job=JOB, rnd=8, chunk=4, slot=9, rank=rank,
                                        values=old[rank]))
        self.expect_nothing()
        # round 9 takes the slot over: w2 first (its old contribution must not survive)
        order = [(1, w2), (0, w1), (2, w3)]
        for rank, w in order:
            self.send(w.port, self.grad(w, PS1, job=JOB, rnd=9, chunk=1, slot=9, rank=rank,
                                        values=new[rank]))
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=JOB, rnd=9, chunk=1, slot=9, count=3, bitmap=0b111,
            values=new[0] + new[1] + new[2]))])
        self.assert_events(absorbed_drop=4, stale_reclaimed=1, aggregated_out=1)


class SaturationSetsOverflow(InaTest):
    """Sums saturate at the int32 limits and the aggregate carries OVERFLOW.  v1model flags
    the sums that saturated; the TNA program flags any contribution outside its fan-in's
    guard range (docs/tofino.md), which these values are, and saturates each add as v1model
    does."""

    def runTest(self):
        self.add_host_routes()
        w1, w2, w3 = WORKERS[:3]
        self.add_job(JOB, PS1, [w1, w2, w3])
        n = self.n
        a = np.full(n, 10, dtype=np.int64)
        b = np.full(n, 20, dtype=np.int64)
        c = np.full(n, -5, dtype=np.int64)
        a[0], b[0], c[0] = INT32_MAX - 5, 100, -10   # saturates high, then pulled back
        a[1], b[1], c[1] = INT32_MIN + 1, -2, 0       # saturates low
        a[2], b[2], c[2] = INT32_MAX, INT32_MIN, 0    # no overflow: exact
        expected = a + b + c
        expected[0] = INT32_MAX - 10                  # saturated at MAX, then -10
        expected[1] = INT32_MIN
        for rank, (w, v) in enumerate(zip((w1, w2, w3), (a, b, c), strict=True)):
            self.send(w.port, self.grad(w, PS1, job=JOB, rnd=2, chunk=0, slot=0, rank=rank,
                                        values=v))
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=JOB, rnd=2, chunk=0, slot=0, count=3, bitmap=0b111, values=expected,
            overflow=True))])
        # a chunk without overflow in the same slot afterwards: flag clear (slot was freed)
        for rank, w in enumerate((w1, w2, w3)):
            self.send(w.port, self.grad(w, PS1, job=JOB, rnd=2, chunk=1, slot=0, rank=rank,
                                        values=c))
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=JOB, rnd=2, chunk=1, slot=0, count=3, bitmap=0b111, values=3 * c))])
        self.assert_events(absorbed_drop=4, aggregated_out=2, overflow_out=1)


class SpoofedBitmapDropped(InaTest):
    """A GRAD whose bitmap is not exactly its sender's rank bit is dropped and counted."""

    def runTest(self):
        self.add_host_routes()
        w1, w2 = WORKERS[:2]
        self.add_job(JOB, PS1, [w1, w2])
        v1, v2 = self.values(seed=1), self.values(seed=2)
        for bitmap in (0b11, 0b10, 0, 1 << 63):
            self.send(w1.port, self.grad(w1, PS1, job=JOB, rnd=1, chunk=0, slot=0, rank=0,
                                         values=v1, bitmap=bitmap))
        self.expect_nothing()
        self.send(w1.port, self.grad(w1, PS1, job=JOB, rnd=1, chunk=0, slot=0, rank=0,
                                     values=v1))
        self.send(w2.port, self.grad(w2, PS1, job=JOB, rnd=1, chunk=0, slot=0, rank=1,
                                     values=v2))
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=JOB, rnd=1, chunk=0, slot=0, count=2, bitmap=0b11, values=v1 + v2))])
        self.assert_events(spoofed_bitmap_drop=4, absorbed_drop=1, aggregated_out=1)


class SlotOutsidePoolForwarded(InaTest):
    """A slot number beyond the job's pool never touches another pool: forwarded as is."""

    def runTest(self):
        self.add_host_routes()
        w1, w2 = WORKERS[:2]
        self.add_job(JOB, PS1, [w1, w2], pool_base=100, pool_size=16)
        v1 = self.values(seed=1)
        self.send(w1.port, self.grad(w1, PS1, job=JOB, rnd=1, chunk=0, slot=16, rank=0,
                                     values=v1))
        self.expect_exactly([(PS1.port, self.forwarded_grad(
            w1, PS1, job=JOB, rnd=1, chunk=0, slot=16, rank=0, values=v1))])
        self.assert_events(slot_out_of_pool=1)


class NonAggregatedGradRouted(InaTest):
    """GRAD of a (job, PS, worker) without an aggregation entry is routed to the PS as is."""

    def runTest(self):
        self.add_host_routes()
        w1 = WORKERS[0]
        v1 = self.values(seed=1)
        self.send(w1.port, self.grad(w1, PS2, job=JOB, rnd=1, chunk=0, slot=0, rank=0,
                                     values=v1))
        self.expect_exactly([(PS2.port, self.forwarded_grad(
            w1, PS2, job=JOB, rnd=1, chunk=0, slot=0, rank=0, values=v1))])
        self.assert_events()


class MalformedInaDropped(InaTest):
    """A packet to the INA port whose length is not header + N values is dropped."""

    def runTest(self):
        self.add_host_routes()
        w1 = WORKERS[0]
        self.add_job(JOB, PS1, [w1, WORKERS[1]])
        good = bytes(self.grad(w1, PS1, job=JOB, rnd=1, chunk=0, slot=0, rank=0,
                               values=self.values(seed=1))[Raw].load)
        for load in (good[:-4], good + b"\0\0\0\0", good[:10]):
            pkt = (Ether(src=w1.mac, dst="02:00:00:00:00:01") / IP(src=w1.ip, dst=PS1.ip)
                   / UDP(sport=40000, dport=wire.GRAD_PORT) / Raw(load))
            self.send(w1.port, pkt)
        self.expect_nothing()
        self.assert_events(malformed_drop=3)


class TwoJobsTwoPsNoInterference(InaTest):
    """Two jobs and two PSs aggregate in separate pools with identical slot/round/chunk."""

    def runTest(self):
        self.add_host_routes()
        w1, w2, w3, w4 = WORKERS[:4]
        self.add_job(1, PS1, [w1, w2], pool_base=0, pool_size=16)
        self.add_job(1, PS2, [w1, w2], pool_base=16, pool_size=16)
        self.add_job(2, PS1, [w3, w4], pool_base=32, pool_size=16)
        v = {k: self.values(seed=i) for i, k in enumerate(
            ["1a1", "1a2", "1b1", "1b2", "2a3", "2a4"])}
        common = dict(rnd=6, chunk=3, slot=2)
        self.send(w1.port, self.grad(w1, PS1, job=1, rank=0, values=v["1a1"], **common))
        self.send(w3.port, self.grad(w3, PS1, job=2, rank=0, values=v["2a3"], **common))
        self.send(w1.port, self.grad(w1, PS2, job=1, rank=0, values=v["1b1"], **common))
        self.expect_nothing()
        self.send(w2.port, self.grad(w2, PS1, job=1, rank=1, values=v["1a2"], **common))
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=1, count=2, bitmap=0b11, values=v["1a1"] + v["1a2"], **common))])
        self.send(w4.port, self.grad(w4, PS1, job=2, rank=1, values=v["2a4"], **common))
        self.expect_exactly([(PS1.port, self.aggregate(
            PS1, job=2, count=2, bitmap=0b11, values=v["2a3"] + v["2a4"], **common))])
        self.send(w2.port, self.grad(w2, PS2, job=1, rank=1, values=v["1b2"], **common))
        self.expect_exactly([(PS2.port, self.aggregate(
            PS2, job=1, count=2, bitmap=0b11, values=v["1b1"] + v["1b2"], **common))])
        self.assert_events(absorbed_drop=3, aggregated_out=3)
