"""How long a worker waits before it takes a chunk the PS passed over for lost: RACK's
reordering window (RFC 8985 section 6.2), learned from the INA transport's own evidence.

Workers send each PS's chunks in order and, over FIFO paths, the PS completes them in order,
so a chunk still without RESULT when a higher one completed was lost (its GRAD, anybody's, or
its RESULT) -- or reordered.  RACK's answer: mark it lost only ``window`` after the higher one
completed, a time, not a count of packets (a count of three resent thousands of chunks per
round when 5% of packets were held back 2 ms).  The window starts at a quarter of the least
RTT seen, as RACK's; a resend that turns out spurious tells exactly how late the original was
(its RESULT, or the PS's answer to the original, came that long after the chunk was passed),
and the window grows to cover that lateness with a margin, never beyond SRTT, where the
ordinary timeout takes over.  Rounds without a spurious resend shrink it back, so a burst of
reordering does not delay loss recovery forever (RACK resets its multiplier likewise).
"""

from __future__ import annotations

from host_stack.ina.rto import CLOCK_GRANULARITY

MARGIN = 1.5  # the window covers this many times the lateness that fooled it
DECAY = 0.75  # per round without a spurious resend


class ReorderWindow:
    """The reordering window in seconds: ``value``."""

    def __init__(self) -> None:
        self.min_rtt: float | None = None
        self.learned = 0.0  # from spurious resends
        self.spurious_this_round = False

    def observe_rtt(self, rtt: float) -> None:
        self.min_rtt = rtt if self.min_rtt is None else min(self.min_rtt, rtt)

    def floor(self) -> float:
        return max(CLOCK_GRANULARITY, (self.min_rtt or 0.0) / 4)

    def value(self, srtt: float | None) -> float:
        """The window now: the learned one, between RACK's floor and ``srtt``."""
        window = max(self.floor(), self.learned)
        return window if srtt is None else max(self.floor(), min(window, srtt))

    def spurious(self, lateness: float) -> None:
        """A resend by this rule was spurious: the original's answer came ``lateness`` after
        the chunk was passed."""
        self.learned = max(self.learned, MARGIN * lateness)
        self.spurious_this_round = True

    def end_round(self) -> None:
        if not self.spurious_this_round:
            self.learned *= DECAY
        self.spurious_this_round = False
