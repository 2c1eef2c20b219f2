"""The web view's document for `inart emulate --web`: each scheme run is a job (one plan
version each), drawn while it runs, with the links' loads measured from the switch
interfaces' byte counters between two reads, the workers' rounds and sending rates from
their /metrics (the emulation's Gatherer), and the fidelity verdict once a run ends."""

from __future__ import annotations

import threading
import time
from typing import Any

from control_plane.model.plan import Plan
from control_plane.observe import view
from emulation.measure.metrics import directed_link_bytes
from emulation.measure.timeseries import Gatherer
from emulation.network.mininet_net import Network

LOG_LINES = 40


class EmulationView:
    """What the page shows of one Emulation; ``installed``, ``started`` and ``finished``
    are called by it as the runs go."""

    def __init__(self, net: Network, unit_bps: float, gatherer: Gatherer) -> None:
        self.net, self.unit_bps, self.gatherer = net, unit_bps, gatherer
        self.lock = threading.Lock()
        topo = net.topo
        self.base = view.base(topo, "emulate", f"inart emulate: {topo.name}")
        self.jobs: list[dict[str, Any]] = []
        self.plans: dict[int, Plan] = {}
        self.events: list[dict[str, Any]] = []
        self.running: int | None = None
        self.last: tuple[float, dict[str, tuple[int, int]]] | None = None
        self.loads: dict[tuple[str, str], float] = {}

    def _log(self, text: str) -> None:
        self.events.append({"time": time.time(), "text": f"{time.strftime('%H:%M:%S')} {text}"})
        del self.events[:-LOG_LINES]

    def installed(self, plan: Plan) -> None:
        with self.lock:
            job_id = len(self.jobs) + 1
            self.plans[job_id] = plan
            self.jobs.append(view.job(job_id, plan.scheme, "installed", None, 1, plan,
                                      unit="units"))
            self._log(f"{plan.scheme}: plan installed (rate {plan.rate:.3g} units)")

    def started(self) -> None:
        self.gatherer.forget()
        with self.lock:
            if self.jobs:
                self.running = self.jobs[-1]["id"]
                self.jobs[-1]["state"] = "running"
                self._log(f"{self.jobs[-1]['name']}: traffic started")

    def finished(self, row: dict[str, Any], verdict: str) -> None:
        with self.lock:
            if self.running is None:
                return
            job = self.jobs[self.running - 1]
            job.update(state="done", round=row.get("rounds"), verdict=verdict,
                       rate_measured=view.finite(row.get("plan_ratio", 0.0)
                                                 * (job["rate_plan"] or 0.0)))
            self.running = None
            self._log(f"{job['name']}: done, {verdict}")

    def _measure(self) -> None:
        """The links' loads since the previous read (units of the topology's capacities)."""
        with self.lock:  # the stream's poll and a request for the state may meet here
            now, counts = time.monotonic(), self.net.interface_bytes()
            if self.last is not None and now > self.last[0]:
                dt = now - self.last[0]
                moved = directed_link_bytes(self.net.addr.port, self.last[1], counts)
                self.loads = {tuple(k.split("->")): b * 8 / dt / self.unit_bps
                              for k, b in moved.items()}
            self.last = (now, counts)

    def snapshot(self) -> dict[str, Any]:
        self._measure()
        rounds = self.gatherer.latest_values("inart_worker_rounds_total")
        rates = self.gatherer.latest_values("inart_worker_sending_rate_bits_per_second")
        with self.lock:
            jobs = [dict(j) for j in self.jobs]
            events = list(self.events)
            running = self.running
        for job in jobs:
            if job["id"] == running:
                workers = [w for w in self.net.topo.workers if w in rounds]
                job["round"] = int(min(rounds[w] for w in workers)) if workers else 0
                if rates:
                    job["rate_measured"] = view.finite(sum(rates.values()) / len(rates)
                                                       / self.unit_bps)
        doc = dict(self.base)
        with self.lock:
            loads = dict(self.loads)
        doc.update(links=view.links(self.net.topo, loads), jobs=jobs, events=events,
                   load_kind="measured", time=time.time())
        return doc
