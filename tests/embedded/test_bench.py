"""`inart bench target`'s rate search and figures, on a simulated switch (no sockets)."""

from __future__ import annotations

from typing import Any

from emulation.targets.embedded import bench
from emulation.targets.embedded.bench import Figure, Search, Trial, figures, search


class FakeRig:
    """A switch that loses nothing up to ``knee`` pkt/s and a sender that tops out at
    ``sender_max``."""

    kind, workload, fan_in, pid = "embedded", "forward", 4, 0

    def __init__(self, knee: float, sender_max: float = 1e9) -> None:
        self.knee, self.sender_max = knee, sender_max

    def trial(self, rate: float, seconds: float) -> Trial:
        offered = min(rate, self.sender_max)
        sent = int(offered * seconds)
        out = sent if offered <= self.knee else int(self.knee * seconds)
        return Trial(rate, offered, sent, sent, out, out, out / seconds)


def run_search(rig: Any, monkeypatch: Any) -> Search:
    monkeypatch.setattr(bench, "rss_kib", lambda pid: 2048)
    return search(rig, 1.0, 8000.0, 4)


def test_search_brackets_the_knee(monkeypatch: Any) -> None:
    s = run_search(FakeRig(50_000), monkeypatch)
    assert 45_000 <= s.pps <= 50_000 and not s.sender_limited
    assert s.best is not None and s.best.loss == 0
    assert s.rss_mib == 2.0 and s.overload_pps == 50_000


def test_search_says_when_the_sender_is_the_limit(monkeypatch: Any) -> None:
    s = run_search(FakeRig(1e6, sender_max=30_000), monkeypatch)
    assert s.sender_limited and s.pps == 30_000


def test_figures_are_medians_with_the_ratio_against_the_goal() -> None:
    def runs(kind: str, rates: list[float]) -> list[Search]:
        return [Search(kind, "forward", r, False, r / 2, 40.0, None) for r in rates]

    figs = figures({"forward": {"embedded": runs("embedded", [30e3, 50e3, 40e3]),
                                "bmv2": runs("bmv2", [10e3, 30e3, 20e3])}}, 2.0)
    by_name = {f.name: f for f in figs}
    emb = by_name["forward.embedded.loss_free_rate"]
    assert (emb.value, emb.ratio, emb.met) == (40e3, 2.0, True)
    assert by_name["forward.bmv2.loss_free_rate"].ratio is None
    assert by_name["forward.embedded.rss_per_switch"].unit == "MiB"
    assert "goal >= 2x bmv2: met" in emb.line()
    assert Figure("x", 1.5, "MiB").line().split() == ["x", "1.5", "MiB"]
