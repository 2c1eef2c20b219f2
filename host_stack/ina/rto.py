"""The retransmission timeout of the INA worker: RFC 6298 from measured RTTs (with Karn's rule
applied by the caller), so a busy host does not resend what is only late.

An INA "RTT" is the time from sending a chunk to its RESULT: the network's round trip plus the
wait for the slowest worker's contribution plus the PS's queue, which on a loaded machine swings
by tens of milliseconds as processes get the CPU.  RFC 6298 follows exactly that: RTO = SRTT +
max(G, 4 RTTVAR), clamped to [lo, hi], backed off by doubling per resend of a chunk.

The worker feeds every RESULT's RTT to ``observe``, which commits one sample per smoothed RTT:
the largest RTT seen since the last one.  RFC 6298's gains assume about one sample per round
trip (classic TCP times one segment per RTT); with hundreds of RESULTs per round trip,
per-RESULT samples would wash a scheduling stall out of RTTVAR within a few milliseconds
(RFC 7323 appendix G makes the same point for timestamps).

When a retransmission turns out spurious (host_stack/ina/transport.py defines when), the RTT
of the original send is known, and ``spurious`` applies the Eifel response of RFC 4015
section 3: SRTT and RTTVAR at least that RTT and half of it, so the next timeout is no
shorter than three times the delay that fooled this one.
"""

from __future__ import annotations

CLOCK_GRANULARITY = 0.001  # G of RFC 6298: select() timeouts are about this coarse


class RtoEstimator:
    """SRTT/RTTVAR and the resulting RTO (seconds), as in RFC 6298 section 2."""

    def __init__(self, initial: float, lo: float, hi: float) -> None:
        if not 0 < lo <= initial <= hi:
            raise ValueError(f"rto: expected 0 < lo {lo} <= initial {initial} <= hi {hi}")
        self.initial, self.lo, self.hi = initial, lo, hi
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.samples = 0
        self.pending = 0.0  # largest RTT observed since the last committed sample
        self.last = 0.0  # when the last sample was committed

    def observe(self, rtt: float, now: float) -> None:
        """An RTT measured at ``now``; a sample is committed at most once per SRTT."""
        self.pending = max(self.pending, rtt)
        if self.srtt is None or now - self.last >= self.srtt:
            self.sample(self.pending)
            self.pending, self.last = 0.0, now

    def spurious(self, rtt: float) -> None:
        """A resend was spurious; ``rtt`` is the RTT of the original send (RFC 4015)."""
        if self.srtt is None:
            self.sample(rtt)
        else:
            self.srtt, self.rttvar = max(self.srtt, rtt), max(self.rttvar, rtt / 2)

    def sample(self, rtt: float) -> None:
        """Add one RTT measurement (of a send that was not retransmitted: Karn)."""
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self.samples += 1

    @property
    def rto(self) -> float:
        """The current timeout: ``initial`` before the first sample."""
        if self.srtt is None:
            return self.initial
        return min(self.hi, max(self.lo, self.srtt + max(CLOCK_GRANULARITY, 4 * self.rttvar)))

    def backoff(self, base: float, resends: int) -> float:
        """Timeout after the ``resends``-th resend of a chunk: ``base`` doubled each time."""
        return min(self.hi, base * 2.0 ** resends)
