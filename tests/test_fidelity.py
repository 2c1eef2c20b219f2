"""The fidelity verdict (emulation/measure/fidelity.py), the CPU samples it reads
(emulation/measure/resources.py) and the kernel pacing classes' tc lines
(emulation/network/host_pacing.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from emulation.measure.fidelity import MIN_RATE_RATIO, judge, ranking_lines
from emulation.measure.resources import SCHEDSTAT, Monitor, parse_stat
from emulation.network.host_pacing import Stream, egress_tree, stream_counts
from emulation.network.mininet_net import NetworkError


def test_a_scheme_at_its_plan_on_an_idle_machine_is_ok():
    v = judge("inart", 0.97, 3, 0.6, 0.0, 0.8)
    assert v.ok and v.fields()["fidelity"] == "ok" and v.fields()["fidelity_reasons"] == ""
    assert v.line().endswith(": ok") and "sent 0.97 of plan, 3 retx" in v.line()


@pytest.mark.parametrize(("ratio", "share", "why"), [
    (0.37, 0.0, "sent 0.37 of its plan"),
    (0.99, 0.8, "machine saturated in 80% of its samples"),
    (float("nan"), 0.0, "sent nan of its plan"),
])
def test_a_scheme_below_its_plan_or_on_a_saturated_machine_is_marked(ratio, share, why):
    v = judge("inart", ratio, 46463, 0.99, share, 3.0)
    assert not v.ok and why in v.fields()["fidelity_reasons"]
    assert v.fields()["fidelity"] == "bounded by the machine" and "MARKED" in v.line()


def test_on_impaired_links_a_rate_cut_is_noted_unless_the_machine_was_saturated():
    v = judge("inart", 0.72, 42414, 0.76, 0.0, 2.5, impaired=True)
    assert v.ok and v.fields()["fidelity"] == "ok"
    assert v.fields()["fidelity_note"].startswith("sent 0.72 of its plan (< 0.9) on impaired links")
    assert v.line().endswith("ok (" + v.note + ")")
    saturated = judge("inart", 0.72, 42414, 0.99, 0.8, 4.0, impaired=True, wake_wait_ms=4.0)
    assert not saturated.ok and saturated.note == ""
    assert "sent 0.72 of its plan" in saturated.fields()["fidelity_reasons"]
    assert not judge("inart", float("nan"), 0, 0.5, 0.0, 1.0, impaired=True).ok


def test_an_unpaced_scheme_is_judged_by_the_machine_alone():
    assert judge("ring", None, 1794, 0.7, 0.2, 1.0).ok
    assert "not paced" in judge("ring", None, 0, 0.7, 0.2, 1.0).line()
    assert not judge("ring", None, 0, 1.0, 0.9, 4.0).ok


def test_no_ranking_when_a_scheme_in_it_is_marked():
    ranked = ["comm time inart/atp = 0.80 (cut 20%)"]
    ok = [judge("inart", 0.95, 0, 0.5, 0.0, 0.5), judge("atp", 1.0, 0, 0.5, 0.0, 0.5)]
    assert ranking_lines(ok, ranked) == ranked
    bad = [judge("inart", 0.37, 46463, 1.0, 0.9, 5.0), ok[1]]
    (line,) = ranking_lines(bad, ranked)
    assert line.startswith("no ranking: the result is bounded by the machine")
    assert "inart: sent 0.37 of its plan" in line and "atp" not in line
    assert ranking_lines(bad, []) == []
    assert MIN_RATE_RATIO == 0.9


STAT = "cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\nprocs_running {run}\n"


def test_parse_stat_reads_busy_total_and_the_run_queue():
    assert parse_stat(STAT.format(busy=30, idle=70, run=5)) == (30.0, 100.0, 5)


def test_monitor_samples_saturation_and_the_run_queue():
    """Two samples of three saturated (>= 95% busy), the run queue per CPU averaged."""
    texts = iter([STAT.format(busy=b, idle=i, run=r) for b, i, r in
                  [(0, 0, 1), (1000, 0, 4), (2000, 0, 4), (2100, 900, 2), (2100, 900, 2)]])
    m = Monitor(lambda: {}, interval=0.0, stat=lambda: next(texts))
    m.mark()
    for _ in range(3):
        m.sample()
    u = m.usage()
    assert u.samples == 3
    assert u.saturated_share == pytest.approx(2 / 3)
    assert u.run_queue == pytest.approx((4 + 4 + 2) / 3 / u.cpus)


def test_egress_tree_gives_each_stream_its_own_class_under_the_link():
    lines = egress_tree("w1-eth0", 5e6, 64, [Stream("10.0.0.9", 50000, 1.25e6),
                                             Stream("10.0.0.10", 50000, 2.5e5)], 194)
    text = "\n".join(lines)
    assert lines[0] == "qdisc add dev w1-eth0 root handle 5: htb default 2"
    assert "classid 5:1 htb rate 5000000bit ceil 5000000bit" in text
    assert "parent 5:1 classid 5:10 htb rate 1250000bit ceil 1250000bit" in text
    assert "parent 5:1 classid 5:11 htb rate 250000bit ceil 250000bit burst 194b cburst 194b" \
        in text  # one frame: a stream idle between rounds does not burst at its start
    assert ("u32 match ip dst 10.0.0.10/32 match ip protocol 17 0xff match ip dport 50000 "
            "0xffff flowid 5:11") in text
    assert len(egress_tree("w1-eth0", 5e6, 64, [])) == 4  # the shaped link alone
    with pytest.raises(ValueError, match="rate 0 bit/s"):
        Stream("10.0.0.9", 50000, 0)


TC_STATS = """class htb 5:10 parent 5:1 leaf 11: prio 0 rate 2Mbit ceil 2Mbit burst 1600b
 Sent 625200 bytes 600 pkt (dropped 2, overlimits 599 requeues 0)
 backlog 0b 0p requeues 0
class htb 5:1 root rate 20Mbit ceil 20Mbit burst 1600b cburst 1600b
 Sent 625828 bytes 608 pkt (dropped 0, overlimits 1 requeues 0)
class htb 5:2 parent 5:1 leaf 10: prio 0 rate 20Mbit ceil 20Mbit burst 1600b cburst 1600b
 Sent 628 bytes 8 pkt (dropped 0, overlimits 0 requeues 0)
"""


def test_stream_counts_sum_the_stream_classes_only():
    assert stream_counts(TC_STATS, 1) == {"bytes": 625200, "packets": 600, "dropped": 2,
                                          "classes": 1}


class _RefusingNet:
    """A network whose hosts' kernels refuse the pacing classes (no u32, say)."""

    def __init__(self) -> None:
        self.paced: list[dict] = []

    def pace(self, streams: dict, burst_bytes: int = 1514) -> None:
        self.paced.append(streams)
        if streams:
            raise NetworkError("host 'w1': egress queue setup failed: Unknown filter \"u32\"")


def test_where_the_kernel_cannot_pace_the_run_falls_back_to_user_pacing_and_says_why():
    from types import SimpleNamespace

    from emulation.runs.emulate import Emulation
    from host_stack.train.hostrun import TrafficConfig

    streams = {"w1": [Stream("10.2.0.1", 50000, 1e5)]}
    emu = SimpleNamespace(net=_RefusingNet(), paced={}, pacing_fallback=None,
                          streams=lambda plan, cfg: streams)
    cfg = TrafficConfig(unit_bps=1e6, pacing="kernel")
    got = Emulation.paced_config(emu, object(), cfg)
    assert got.pacing == "user" and emu.paced == {}
    assert emu.net.paced == [streams, {}]  # tried, then the plain link shaping back
    assert "Unknown filter" in emu.pacing_fallback
    note = Emulation.pacing_note(emu, got, None)
    assert note == {"pacing": "user", "pacing_fallback": emu.pacing_fallback}


def test_a_busy_machine_does_not_mark_a_run_whose_processes_did_not_wait():
    """A niced neighbour keeps every CPU busy; the emulation's processes hardly waited."""
    v = judge("inart", 0.99, 0, 1.0, 1.0, 2.0, wake_wait_ms=0.7)
    assert v.ok and v.fields()["fidelity_basis"] == "run-queue wait of the emulation's processes"
    assert "its processes waited 0.70 ms a wake for a CPU" in v.line()
    starved = judge("inart", 0.99, 0, 1.0, 1.0, 2.0, wake_wait_ms=6.5)
    assert not starved.ok
    assert "its processes waited 6.50 ms a wake for a CPU (>= 2 ms)" in starved.line()
    # without schedstat the machine's saturation judges, and the row says so
    unknown = judge("inart", 0.99, 0, 1.0, 1.0, 2.0)
    assert not unknown.ok and unknown.fields()["fidelity_basis"] == "machine CPU (no schedstat)"


def _burn(nice: int, cpu: int) -> subprocess.Popen:
    return subprocess.Popen(["taskset", "-c", str(cpu), "nice", "-n", str(nice), sys.executable,
                             "-c", "while True: pass"])


def _wait_share_beside(neighbour_nice: int) -> float:
    """Our busy process's wait for a CPU per second run, on one CPU beside a busy neighbour."""
    cpu = max(os.sched_getaffinity(0))
    neighbour = _burn(neighbour_nice, cpu)
    ours = _burn(0, cpu)
    try:
        with Monitor(lambda: {"ours": [ours.pid]}, interval=0.2) as m:
            time.sleep(0.3)
            m.mark()
            time.sleep(2.0)
            u = m.usage()
    finally:
        for p in (neighbour, ours):
            p.kill()
            p.wait()
    assert u.ran_s is not None and u.ran_s > 0.1 and u.waited_s is not None, u
    assert u.slices > 0 and u.wake_wait_ms == pytest.approx(u.waited_s / u.slices * 1e3)
    return u.waited_s / u.ran_s


@pytest.mark.skipif(not SCHEDSTAT, reason="this kernel keeps no schedstat")
def test_the_monitor_measures_how_long_a_group_waited_for_a_cpu():
    """Beside a nice-0 neighbour on one CPU our process waits about as long as it runs; a
    nice-19 neighbour hardly delays it (the scheduler gives the CPU to the nice-0 task).
    Other work on the machine adds to both (on a busy 2-core machine, 0 to 0.5 s a second
    alone), so the two are compared, not bounded alone."""
    shared = _wait_share_beside(0)
    niced = _wait_share_beside(19)
    assert shared > 0.7, shared
    assert niced + 0.3 < shared, (niced, shared)
