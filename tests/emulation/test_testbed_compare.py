"""The testbed comparison's arithmetic (emulation/experiments/inart_testbed.py), on hand-made
runs."""

from __future__ import annotations

import pytest

from emulation.experiments.inart_testbed import PAPER, compare


def run(scheme: str, seed: int, comm: float, rate: float, plan: float | None) -> dict:
    return {"scheme": scheme, "seed": seed, "rate_mbps": rate, "images_per_s": 192 / (1 + comm),
            "iter_s": 1 + comm, "comm_s": comm, "train_s": 60 * (1 + comm),
            "time_to_target_s": None if scheme == "lbmm" else 10 * (1 + comm),
            "plan_rate_units": plan}


def test_ratios_are_to_inarts_median_and_beside_the_papers() -> None:
    rows = [run("inart", 0, 0.4, 2.0, 2.5), run("inart", 1, 0.6, 2.2, 2.5),
            run("atp", 0, 0.75, 1.6, 2.0), run("atp", 1, 0.65, 1.5, 2.0),
            run("lbmm", 0, 1.0, 1.0, 4 / 3), run("ring", 0, 0.3, 3.0, None)]
    lines = {(x["figure"], x["scheme"]): x for x in compare(rows)}
    comm = lines[("Fig. 5", "atp")]
    assert comm["ours"] == pytest.approx(0.7) and comm["ours_vs_inart"] == pytest.approx(1.4)
    assert (comm["ours_min"], comm["ours_max"]) == (0.65, 0.75)
    assert comm["paper_vs_inart"] == pytest.approx(0.45 / 0.31)
    assert comm["ours/paper"] == pytest.approx(1.4 / (0.45 / 0.31))
    assert comm["plan_vs_inart"] == pytest.approx(2.5 / 2.0)  # comm time goes as 1/f
    assert lines[("Fig. 2", "lbmm")]["plan_vs_inart"] == pytest.approx((4 / 3) / 2.5)
    assert lines[("Fig. 2", "lbmm")]["ours_vs_inart"] == pytest.approx(1.0 / 2.1)
    assert lines[("Fig. 7", "lbmm")]["ours"] is None  # never reached: no ratio made up
    assert lines[("Fig. 4", "ring")]["paper"] is None  # the paper has no ring
    assert len(lines) == len(PAPER) * 4


def test_no_inart_run_is_refused() -> None:
    with pytest.raises(ValueError, match="inart"):
        compare([run("atp", 0, 0.5, 1.0, 2.0)])
