"""Two jobs at once on one Mininet network, planned together by the controller service:
fig1 split in two (w1, w2, w5 -> s1 and w3, w4, w6 -> s2), each in its own lane, both jobs'
traffic at the same time through the shared switches and the v1-v2 link (loaded to its
capacity by the two plans together); every round's sums exact, each job's measured sending
rate within the e2e test's 15% of its plan's."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from control_plane.model.topologies import fig1
from emulation.experiments.multi_job import JobsError, ServedNetwork, parse_jobs, run_jobs
from emulation.network.link_impair import NO_IMPAIRMENT
from host_stack.train.hostrun import TrafficConfig

SCALE = 0.25  # Mbit/s per topology unit, as in test_emulation_e2e.py
JOBS = "w1,w2,w5:s1;w3,w4,w6:s2"


@pytest.mark.root
@pytest.mark.usefixtures("needs_mininet_and_program")
def test_two_jobs_at_once_on_fig1_are_exact_at_their_plans_rates(tmp_path: Path) -> None:
    cfg = TrafficConfig(rounds=3, values=32 * 1000, unit_bps=SCALE * 1e6, deadline_s=300)
    with ExitStack() as stack:
        served = ServedNetwork(stack, fig1(), tmp_path, "embedded", SCALE, NO_IMPAIRMENT, True)
        rows = run_jobs(served, parse_jobs(JOBS, fig1()), "inart", cfg, tmp_path, True)
    for r in rows:
        print(r["job"], f"rate {r['rate_mbps']:.3f} / plan {r['plan_mbps']:.3f} Mb/s, "
              f"retx {r['retx']}, exact {r['exact']}")
    assert len(rows) == 2 and {r["wire_job"] // 2 for r in rows} == {8, 9}  # two lanes
    for r in rows:
        assert r["exact"] is True, r["mismatches"]
        assert r["versions_used"] == [r["version"]]
        assert r["plan_units"] == pytest.approx(2.0)  # both at their alone rate, together
        assert 0.85 <= r["rate_ratio"] <= 1.15, r


@pytest.mark.parametrize("text, field", [
    ("w1,w2", "expected WORKERS:PSS"), ("w1:s1;w1:s2", "in two jobs"),
    ("w1:w2", "not a ps"), ("x9:s1", "not a worker")])
def test_bad_jobs_name_the_option(text: str, field: str) -> None:
    with pytest.raises(JobsError, match=field):
        parse_jobs(text, fig1())


def test_default_jobs_are_the_halves() -> None:
    assert parse_jobs("", fig1()) == [(["w1", "w2", "w3"], ["s1"]),
                                      (["w4", "w5", "w6"], ["s2"])]
