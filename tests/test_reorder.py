"""The reordering window that tells a reordered chunk from a lost one (RACK's reo_wnd)."""

import pytest

from host_stack.ina.reorder import DECAY, MARGIN, ReorderWindow
from host_stack.ina.rto import CLOCK_GRANULARITY


def test_starts_at_a_quarter_of_the_least_rtt_and_never_below_the_clock():
    w = ReorderWindow()
    assert w.value(None) == CLOCK_GRANULARITY
    w.observe_rtt(0.02)
    w.observe_rtt(0.012)
    assert w.value(None) == pytest.approx(0.003)  # min RTT / 4
    w.observe_rtt(0.001)
    assert w.value(None) == CLOCK_GRANULARITY


def test_a_spurious_resend_widens_it_to_cover_the_lateness_up_to_srtt():
    w = ReorderWindow()
    w.spurious(0.004)
    assert w.value(None) == pytest.approx(MARGIN * 0.004)
    assert w.value(srtt=0.005) == pytest.approx(0.005)  # RACK: never beyond SRTT
    w.spurious(0.001)  # a smaller lateness does not shrink it
    assert w.value(None) == pytest.approx(MARGIN * 0.004)


def test_it_shrinks_only_after_rounds_without_a_spurious_resend():
    w = ReorderWindow()
    w.spurious(0.01)
    w.end_round()  # this round was fooled: kept
    assert w.learned == pytest.approx(MARGIN * 0.01)
    w.end_round()
    w.end_round()
    assert w.learned == pytest.approx(MARGIN * 0.01 * DECAY ** 2)
