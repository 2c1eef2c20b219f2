"""An emulation's metrics: fig1 on Mininet with embedded switches, every switch, PS and
worker serving /metrics; the emulation scrapes them into metrics.jsonl and re-exports them on
one address.  The switches' aggregation counters rise by exactly the aggregates the plan
makes, and the workers' rounds advance as the job runs; its web view's document shows the
run with measured link loads while it goes, and its verdict after."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from control_plane.deploy.transaction import addressed_switches
from control_plane.model.topologies import fig1
from control_plane.observe.exporter import samples, scrape, value
from control_plane.observe.p4runtime_metrics import registry_for as p4runtime_registry
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
    docs: list[dict] = []
    with Emulation(topo, tmp_path, "embedded", SCALE, quiet=True, metrics="127.0.0.1:0",
                   web="127.0.0.1:0") as emu:
        assert emu.exporter is not None and emu.web is not None
        compiled = emu.install(plan)
        cfg = TrafficConfig(rounds=ROUNDS, values=32 * 600, unit_bps=emu.unit_bps,
                            deadline_s=300)
        running = threading.Event()

        def watch(url: str) -> None:
            while not running.wait(0.3):
                with urllib.request.urlopen(url, timeout=5) as reply:
                    docs.append(json.load(reply))
        watcher = threading.Thread(target=watch, args=(emu.web.url + "api/state",))
        watcher.start()
        try:
            run = emu.run(plan, compiled, cfg, "inart")
        finally:
            running.set()
            watcher.join()
        assert emu.gatherer is not None and emu.gatherer.gather() > 0
        merged = scrape(emu.exporter.url)
        # the same counters read over P4Runtime, as for a bmv2 or Tofino switch
        over_p4runtime = {sw: samples(generate_latest(p4runtime_registry(
            address, emu.program.p4info, emu.net.switch_ports(sw))).decode())
            for sw, address in addressed_switches(emu.addr).items()}
        deadline = time.monotonic() + 5  # the view reads its source every 0.5 s
        while True:
            with urllib.request.urlopen(emu.web.url + "api/state", timeout=5) as reply:
                after = json.load(reply)
            if after["jobs"][0]["state"] == "done" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
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
        read = over_p4runtime[sw]
        assert value(read, "inart_switch_up") == 1
        assert value(read, "inart_switch_ina_aggregations_total") == got
        assert value(read, "inart_switch_port_bytes_total", direction="tx") >= value(
            merged, "inart_switch_port_bytes_total", process=sw, direction="tx")
    series = read_series(tmp_path / SERIES_FILE)
    processes = {line["process"] for line in series}
    assert set(topo.switches) <= processes
    worker_rounds = [line["samples"].get("inart_worker_rounds_total", 0) for line in series
                     if line["process"] == "w1"]
    assert worker_rounds and max(worker_rounds) >= 1, worker_rounds
    ps_lines = [line for line in series if line["process"] in topo.pss]
    assert ps_lines and max(line["samples"].get('inart_ps_received_packets_total{kind="first"}',
                                                0) for line in ps_lines) > 0
    # the web view: measured loads and rounds while it ran, the verdict once done
    assert docs and all(d["load_kind"] == "measured" for d in docs)
    assert max(lk["utilisation"] for d in docs for lk in d["links"]) > 0.1
    assert max(d["jobs"][0]["round"] or 0 for d in docs if d["jobs"]) >= 1
    job = after["jobs"][0]
    assert job["state"] == "done" and job["round"] == ROUNDS and job["verdict"], job
    assert job["plan"]["aggregate_at"] == sorted({st.switch for st in plan.streams})
