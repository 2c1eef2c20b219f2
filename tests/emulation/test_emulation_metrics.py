"""An emulation's metrics: fig1 on Mininet with embedded switches, every switch, PS and
worker serving /metrics; the emulation scrapes them into metrics.jsonl and re-exports them on
one address.  The switches' aggregation counters rise by exactly the aggregates the plan
makes, and the workers' rounds advance as the job runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from control_plane.model.topologies import fig1
from control_plane.observe.exporter import scrape, value
from control_plane.solver.solve import plan_for
from emulation.measure.timeseries import read_series
from emulation.runs.emulate import SERIES_FILE, Emulation
from host_stack.train.hostrun import TrafficConfig

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet_and_program")]
SCALE = 0.25  # Mbit/s per topology unit, as in test_emulation_e2e.py
ROUNDS = 3


def test_fig1_metrics_follow_the_traffic(tmp_path: Path) -> None:
    topo = fig1()
    plan = plan_for(topo, "inart", 0)
    with Emulation(topo, tmp_path, "embedded", SCALE, quiet=True, metrics="127.0.0.1:0") as emu:
        assert emu.exporter is not None
        compiled = emu.install(plan)
        cfg = TrafficConfig(rounds=ROUNDS, values=32 * 600, unit_bps=emu.unit_bps,
                            deadline_s=300)
        run = emu.run(plan, compiled, cfg, "inart")
        assert emu.gatherer is not None and emu.gatherer.gather() > 0
        merged = scrape(emu.exporter.url)
    row = run.row
    assert row["exact"] is True
    # every aggregated stream emits one packet per chunk of its PS's shard and round
    want = {sw: ROUNDS * sum(run.job.chunks[st.ps] for st in plan.streams if st.switch == sw)
            for sw in topo.switches}
    assert sum(want.values()) > 0
    for sw in topo.switches:
        got = value(merged, "inart_switch_ina_aggregations_total", process=sw)
        # the program's own counters over P4Runtime say the same
        assert got == row["switch_events"][sw]["aggregated_out"], (sw, got)
        if row["retx"] == 0 and row["collision"] == 0:
            assert got == want[sw], (sw, got, want)
        assert value(merged, "inart_switch_port_packets_total", process=sw,
                     direction="rx") > 0
    series = read_series(tmp_path / SERIES_FILE)
    processes = {line["process"] for line in series}
    assert set(topo.switches) <= processes
    worker_rounds = [line["samples"].get("inart_worker_rounds_total", 0) for line in series
                     if line["process"] == "w1"]
    assert worker_rounds and max(worker_rounds) >= 1, worker_rounds
    ps_lines = [line for line in series if line["process"] in topo.pss]
    assert ps_lines and max(line["samples"].get('inart_ps_received_packets_total{kind="first"}',
                                                0) for line in ps_lines) > 0
