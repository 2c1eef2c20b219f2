"""examples/grafana-inart.json: valid JSON whose every query names a metric some inart
process exports (a renamed metric must not leave a dashboard panel silently empty)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from control_plane.deploy.pipeline import pipeline_for
from control_plane.drivers.p4runtime import P4Info
from control_plane.observe.exporter import samples
from control_plane.observe.switch_metrics import PortCounters, families
from control_plane.repo import REPO
from control_plane.service.controller import Controller
from control_plane.service.store import Store
from control_plane.service.switches import MemoryInstaller
from host_stack.ina.metrics import WorkerMetrics, ps_registry

DASHBOARD = REPO / "examples" / "grafana-inart.json"


class Switch:
    def collect(self):
        return families({"aggregated_out": 3}, {1: PortCounters("v1-eth1", 1, 2, 3, 4)},
                        {"rx_overflow": 0})


def exported(tmp_path: Path) -> set[str]:
    """Every sample name serve, a switch, a worker and a PS export."""
    controller = Controller(Store(tmp_path / "state"), MemoryInstaller(),
                            P4Info.load(pipeline_for("embedded").p4info))
    m = controller.metrics
    m.rpc_seconds.labels("ListJobs").observe(0.001)
    m.installed("job 1 submitted", 0.1)
    m.events.labels("EVENT_KIND_LINK_DOWN").inc()
    m.reconciles.inc()
    switch = CollectorRegistry()
    switch.register(Switch())
    worker = WorkerMetrics(lambda: {"retx_sent": 1})
    worker.round(0.5, 1000, 1200)
    names = set()
    for registry in (m.registry, switch, worker.registry, ps_registry(lambda: {"rx_grad": 1})):
        names |= {name for name, _ in samples(generate_latest(registry).decode())}
    # gauges of live jobs and switches appear once there are some: named from the source
    names |= {"inart_service_job_plan_version", "inart_service_job_plan_rate",
              "inart_service_job_round", "inart_service_switch_reachable"}
    return names


def test_every_dashboard_query_names_an_exported_metric(tmp_path: Path) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 20
    used = {name for e in exprs for name in re.findall(r"\binart_[a-z_]+", e)}
    missing = used - exported(tmp_path)
    assert not missing, f"dashboard queries metrics nobody exports: {sorted(missing)}"
    service = [p for p in dashboard["panels"] if "inart_service_" in json.dumps(p)]
    assert service and len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
