"""The web view's document for `inart serve`: read from the controller in-process (under its
state lock, briefly), so the page shows exactly the service's state: the registered network
with down links and lost switches, each live job's active plan version, the round its hosts
reported, and the last messages Watch streams (events, new versions, job changes).

Link loads are the planned ones (each active version at its rate, plus the background the
events reported): the service measures no traffic itself; `inart emulate --web` shows
measured loads."""

from __future__ import annotations

import time
from typing import Any

from control_plane.cli.ctl import watch_line
from control_plane.model.plan import Plan
from control_plane.observe import view
from control_plane.service.controller import Controller

LOG_LINES = 40  # the newest Watch messages the page lists
QUIET = ("install",)  # per-switch install progress: too chatty for the log


class ServiceSource:
    """``snapshot()``: the document of the controller's current state."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self._base: tuple[int, dict[str, Any]] | None = None  # topology identity, its base

    def snapshot(self) -> dict[str, Any]:
        c = self.controller
        with c.lock:
            net = c.network
            if net is None:
                return {"source": "serve", "title": "inart serve: no topology registered",
                        "width": view.WIDTH, "height": 100, "nodes": [], "links": [],
                        "jobs": [], "events": self._log(), "load_kind": "planned"}
            active: list[tuple[Any, Plan | None]] = []
            for job in sorted(c.jobs.values(), key=lambda j: j.id):
                if job.live:
                    version = job.versions.get(job.active)
                    active.append((job, version.plan if version else None))
            down = set(net.mod.down)
            background = dict(net.mod.link_load)
            topo = net.topology
            jobs = [view.job(job.id, job.name, job.state, max(job.progress.values(), default=None),
                             job.active, plan) for job, plan in active]
        if self._base is None or self._base[0] != id(topo):
            self._base = (id(topo), view.base(topo, "serve", f"inart serve: {topo.name}"))
        doc = dict(self._base[1])
        loads = view.planned_loads(plan for _, plan in active if plan is not None)
        for (a, b), link in topo.links.items():
            extra = background.get(frozenset((a, b)), link.background or 0.0)
            if extra:
                loads[(a, b)] = loads.get((a, b), 0.0) + extra
        doc.update(links=view.links(topo, loads, down), jobs=jobs, events=self._log(),
                   load_kind="planned", time=time.time())
        return doc

    def _log(self) -> list[dict[str, Any]]:
        hub = self.controller.hub
        with hub.lock:
            kept = [ev for ev in hub.kept if ev.WhichOneof("what") not in QUIET]
        return [{"time": ev.time, "text": watch_line(ev)} for ev in kept[-LOG_LINES:]]
