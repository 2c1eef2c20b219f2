"""The retransmission timeout of the INA worker: RFC 6298 from measured RTTs (with Karn's rule
applied by the caller), so a busy host does not resend what is only late.

An INA "RTT" is the time from sending a chunk to its RESULT: the network's round trip plus the
wait for the slowest worker's contribution plus the PS's queue, which on a loaded machine swings
by tens of milliseconds as processes get the CPU.  RFC 6298 follows exactly that: RTO = SRTT +
max(G, 4 RTTVAR), clamped to [lo, hi], backed off by doubling per resend of a chunk.

The worker takes one sample per batch of RESULTs (its largest RTT, not one per chunk): with
hundreds of RESULTs per batch, per-chunk samples would weigh one scheduling stall hundreds
of times less than the timer it must cover (RFC 7323 appendix G makes the same point for
timestamps).
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
