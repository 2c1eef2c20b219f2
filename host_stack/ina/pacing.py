"""Pacing a sender to a target bit rate (the plan's f * x_s, converted to bit/s), in user space.

The fallback where no kernel queue paces the worker's streams (``--pacing user``: real hosts,
``inart train``); emulations pace in the kernel (emulation/network/host_pacing.py), because this
bucket sends nothing while its process waits for a CPU.

A token bucket rather than a fixed inter-packet gap: Python's sleep and scheduling jitter are
larger than one packet's time at tens of Mbit/s, so the sender must be allowed to catch up in
short bursts (``burst_bytes``) while the long-run rate stays at the target.

The bucket starts empty, not full: every round starts a new pacer, and a full bucket sent
``burst_bytes`` at once from every stream at the same instant.  Where the plan loads a link to
100% (InArt's optimum usually does), that start-of-round burst is a queue the link can never
drain, because the paced load afterwards equals its capacity: measured on fig1 it stayed for
the whole round, overflowed the 64-packet FIFO and caused ~2,000 retransmissions per round
(each lost aggregate costs one resend per worker, unaggregated).  Only tokens earned while
waiting (scheduling stalls) are spent in bursts.
"""

from __future__ import annotations

import time

# Bytes one INA packet takes on an Ethernet link besides its UDP payload:
# Ethernet header 14 + IPv4 20 + UDP 8.  Rates are link rates, so pacing counts them.
FRAME_OVERHEAD = 14 + 20 + 8


class Pacer:
    """Token bucket in bytes; ``rate_bps=None`` never delays."""

    def __init__(self, rate_bps: float | None, burst_bytes: int = 16 * 1024) -> None:
        if rate_bps is not None and rate_bps <= 0:
            raise ValueError(f"pacing rate {rate_bps} bit/s: expected > 0 or None (unpaced)")
        self.rate = None if rate_bps is None else rate_bps / 8.0  # bytes per second
        self.burst = float(burst_bytes)
        self.tokens = 0.0
        self.stamp = time.monotonic()

    def _refill(self, now: float) -> None:
        if self.rate is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def delay(self, nbytes: int, now: float) -> float:
        """Seconds until ``nbytes`` may go (0 when it may go now)."""
        if self.rate is None:
            return 0.0
        self._refill(now)
        return 0.0 if self.tokens >= nbytes else (nbytes - self.tokens) / self.rate

    def budget(self, nbytes: int, now: float) -> int:
        """How many packets of ``nbytes`` may go now, as one batch (unpaced: no limit)."""
        if self.rate is None:
            return 1 << 30
        self._refill(now)
        return max(0, int(self.tokens // nbytes))

    def take(self, nbytes: int, now: float) -> None:
        """Account for ``nbytes`` sent (may go negative: retransmissions are never held back)."""
        if self.rate is not None:
            self._refill(now)
            self.tokens -= nbytes
