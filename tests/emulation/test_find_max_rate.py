"""The rate sweep's verdicts, on faked runs: a factor holds only if the network carried it."""

from __future__ import annotations

from types import SimpleNamespace

from emulation.runs.emulate import Emulation
from host_stack.train.hostrun import TrafficConfig


def _sweep(measured: dict[float, tuple[float, int]]) -> list[dict]:
    """measured: factor -> (measured/paced rate ratio, retransmissions out of 1000 packets)."""
    emu = Emulation.__new__(Emulation)  # no network: install and run are faked below
    emu.install = lambda plan: None

    def run(plan, compiled, cfg, tag):
        ratio, retx = measured[cfg.rate_factor]
        job = SimpleNamespace(rounds={"w1": [{"packets": 1000}]}, exact=True)
        row = {"plan_rate_mbps": cfg.rate_factor, "rate_mbps": ratio * cfg.rate_factor,
               "rate_ratio": ratio, "retx": retx}
        return SimpleNamespace(job=job, row=row)

    emu.run = run
    plan = SimpleNamespace(scheme="atp")
    return emu.find_max_rate(plan, None, TrafficConfig(), sorted(measured))


def test_a_rate_the_network_does_not_carry_fails_even_without_resends():
    rows = _sweep({1.0: (0.99, 0), 1.2: (0.83, 0), 1.5: (0.66, 0)})
    assert [r["holds"] for r in rows] == [True, False]  # stops after the first failure


def test_resends_above_the_threshold_fail():
    rows = _sweep({1.0: (0.99, 5), 1.1: (0.99, 30)})
    assert [r["holds"] for r in rows] == [True, False]
    assert rows[1]["retx_fraction"] == 0.03
