"""`inart serve`'s Prometheus metrics: what the service did (counters and histograms updated
where it happens) and what it holds now (gauges read from the controller at each scrape, so
they cannot drift from its state).

Names follow Prometheus' conventions: ``inart_service_`` prefix, seconds, ``_total``
counters.  docs/observability.md lists them; examples/grafana-inart.json draws them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector


class Controlled(Protocol):
    """What the gauges read of the controller (service/controller.py imports this module)."""

    lock: threading.Lock
    jobs: dict[int, Any]
    network: Any
    status: dict[str, Any]

JOB_STATES = ("stalled", "running", "degraded", "cancelled")
# RPCs take from well under a millisecond (ListJobs) to seconds (a re-plan on a fat-tree)
RPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
               10, 30)


class StateCollector(Collector):
    """Gauges of the controller's current state, read under its state lock."""

    def __init__(self, controller: Controlled) -> None:
        self.controller = controller

    def collect(self) -> Iterator[GaugeMetricFamily]:
        c = self.controller
        jobs = GaugeMetricFamily("inart_service_jobs", "Jobs by state", labels=["state"])
        version = GaugeMetricFamily("inart_service_job_plan_version",
                                    "Active plan version of each live job", labels=["job"])
        rate = GaugeMetricFamily("inart_service_job_plan_rate",
                                 "Planned per-worker rate of each live job's active version "
                                 "(topology units)", labels=["job"])
        round_ = GaugeMetricFamily("inart_service_job_round",
                                   "Highest round a job's hosts reported", labels=["job"])
        reachable = GaugeMetricFamily("inart_service_switch_reachable",
                                      "1 if the switch answered at the last sync or probe",
                                      labels=["switch"])
        with c.lock:
            counts = dict.fromkeys(JOB_STATES, 0)
            for job in c.jobs.values():
                counts[job.state] = counts.get(job.state, 0) + 1
                if not job.live:
                    continue
                v = job.versions.get(job.active)
                version.add_metric([str(job.id)], job.active)
                rate.add_metric([str(job.id)], v.plan.rate if v else 0.0)
                round_.add_metric([str(job.id)], max(job.progress.values(), default=0))
            switches = sorted(c.network.switches) if c.network else []
            for sw in switches:
                status = c.status.get(sw)
                reachable.add_metric([sw], 1.0 if status is not None and status.reachable
                                     else 0.0)
        for state, n in counts.items():
            jobs.add_metric([state], n)
        yield from (jobs, version, rate, round_, reachable)


class ServiceMetrics:
    """The service's own registry: nothing of another process or test leaks in."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.rpc_seconds = Histogram("inart_service_rpc_duration_seconds",
                                     "gRPC request latency by method", ["method"],
                                     buckets=RPC_BUCKETS, registry=r)
        self.installs = Counter("inart_service_plan_installs_total",
                                "Plan versions installed on the switches", ["reason"],
                                registry=r)
        self.install_seconds = Histogram("inart_service_plan_install_duration_seconds",
                                         "Time to write a new plan version's entries",
                                         buckets=RPC_BUCKETS, registry=r)
        self.reconciles = Counter("inart_service_reconciles_total",
                                  "Read-backs (and repairs) of every switch", registry=r)
        self.events = Counter("inart_service_events_total", "Network events reported",
                              ["kind"], registry=r)

    def watch(self, controller: Controlled) -> None:
        """Add the gauges of ``controller``'s state."""
        self.registry.register(StateCollector(controller))

    def installed(self, reason: str, seconds: float) -> None:
        """A version was made; ``reason`` as the controller gives it ("job 3 submitted",
        "event 7: ...", "retry", ...), counted by its kind: a label per event would grow
        without bound."""
        self.installs.labels(reason_kind(reason)).inc()
        self.install_seconds.observe(seconds)


def reason_kind(reason: str) -> str:
    """submitted | cancelled | event | retry | deferred: why a version was made."""
    for kind in ("submitted", "cancelled", "event", "retry", "deferred"):
        if kind in reason:
            return kind
    return "other"
