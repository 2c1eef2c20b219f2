"""The replan part of `inart bench controller`: how long a network event takes to become new
entries.

Per topology: an `inart serve` controller (in this process, gRPC on loopback) with the
topology's switches, one job over all workers and PSs, then events on links the job's plan
uses now (links between switches first, most used first), each going down and then up.
Each event re-plans (phase 2) and installs the new version beside the old one; the figure
is the median time of the link-down events from sending ReportEvent to its reply, which the
service sends once the new version's entries are written on every switch (make-before-
break's "make": the entries are active).  A link coming back up brings back the best plan
the job knows for that network (no solving; the plan made during the failure may stay, if
it is better); its median is reported beside.  Old versions drain at once between
events (no host reports progress), so no event is deferred.

Beside the wall-clock figure each line gives the service's CPU time per event (this process:
the solver, compiling, diffing, gRPC; not the switch processes): on a shared machine the wall
time grows with the load average, the CPU time much less.

Switches are embedded P4 targets (`inart switch`, one process each, real P4Runtime) or held in
memory (--switches memory: planning and the service's own work, no P4Runtime); `auto` uses
embedded targets up to --max-embedded switches.  Goals: fig1 <= 1 s, fattree:6 <= 5 s.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

from control_plane.deploy.pipeline import pipeline_for
from control_plane.drivers.p4runtime import P4Info
from control_plane.localhost import free_ports
from control_plane.model.plan import Plan
from control_plane.model.topologies import build_topology
from control_plane.model.topology import Topology
from control_plane.repo import child_env
from control_plane.service.client import Client
from control_plane.service.controller import Controller
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.server import build_server
from control_plane.service.store import Store
from control_plane.service.switches import Installer, MemoryInstaller, P4RuntimeInstaller

GOALS = {"fig1": 1.0, "fattree:6": 5.0}  # seconds: replan latency goals
READY_S = 120.0


@contextmanager
def embedded_switches(topo: Topology) -> Iterator[dict[str, tuple[str, int]]]:
    """One `inart switch` process per switch of ``topo``: name -> (address, device id)."""
    procs: list[subprocess.Popen] = []
    where: dict[str, tuple[str, int]] = {}
    try:
        for (i, sw), port in zip(enumerate(topo.switches, start=1),
                                 free_ports(len(topo.switches)), strict=True):
            address = f"127.0.0.1:{port}"
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "control_plane.cli", "switch", "--target", "embedded",
                 "--listen", address, "--device-id", str(i)], stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, env=child_env()))
            where[sw] = (address, i)
        deadline = time.monotonic() + READY_S
        for proc in procs:
            line = proc.stdout.readline() if proc.stdout else ""
            if "ready" not in line or time.monotonic() > deadline:
                raise RuntimeError(f"an embedded switch did not start: {line.strip()}")
        yield where
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def used_links(plan: Plan) -> list[tuple[str, str]]:
    """The physical links the plan's flows use: links between switches first, then hosts'
    links, each kind most used first."""
    flows: dict[tuple[str, str], int] = {}
    for f in plan.flows:
        for a, b in zip(f.path, f.path[1:], strict=False):
            key = (a, b) if (a, b) < (b, a) else (b, a)
            flows[key] = flows.get(key, 0) + 1

    def fabric(link: tuple[str, str]) -> bool:
        return all(plan.topology.nodes[n].kind == "switch" for n in link)
    return sorted(flows, key=lambda k: (not fabric(k), -flows[k], k))


def measure(spec: str, switches: str, events: int, quiet: bool) -> dict:
    """Replan latencies of ``events`` links going down and up on one topology."""
    topo = build_topology(spec)
    pipeline = pipeline_for("embedded")
    with tempfile.TemporaryDirectory() as state, _switches(topo, switches) as (where, installer):
        controller = Controller(Store(state), installer, P4Info.load(pipeline.p4info),
                                drain_seconds=0.0, reconcile_interval=3600.0)
        controller.start()
        server, port = build_server(controller, "127.0.0.1:0")
        client = Client(f"127.0.0.1:{port}")
        try:
            client.register_topology(topo, where)
            job = client.submit(model_size=1e6)
            samples: list[dict] = []
            tried: set[tuple[str, str]] = set()
            for _ in range(events):  # a link the plan running now uses, one not tried yet
                plan = Plan.from_dict(json.loads(client.plan(job.id).plan_json))
                link = next(k for k in used_links(plan) if k not in tried)
                tried.add(link)
                for kind in ("link-down", "link-up"):
                    samples.append(_event(client, job.id, spec, kind, link, quiet))
        finally:
            client.close()
            server.stop(0).wait()
            controller.stop()
    down = [s for s in samples if s["event"] == "link-down"]
    up = [s for s in samples if s["event"] == "link-up"]
    median = statistics.median(s["seconds"] for s in down)
    goal = GOALS.get(spec)
    return {"name": f"controller.replan[{spec}]", "topology": spec, "value": round(median, 4),
            "unit": "s", "goal": goal, "ratio": round(median / goal, 3) if goal else None,
            "max": round(max(s["seconds"] for s in down), 4),
            "cpu_s": round(statistics.median(s["cpu_seconds"] for s in down), 4),
            "plan_s": round(statistics.median(s["plan_seconds"] for s in down), 4),
            "install_s": round(statistics.median(s["install_seconds"] for s in down), 4),
            "restore_s": round(statistics.median(s["seconds"] for s in up), 4),
            "events": len(down), "switches": switches,
            "load_avg": round(os.getloadavg()[0], 2), "cores": os.cpu_count(),
            "samples": samples}


def _event(client: Client, job_id: int, spec: str, kind: str, link: tuple[str, str],
           quiet: bool) -> dict:
    """One timed event: until the reply, i.e. until the new version's entries are written."""
    t0, c0 = time.perf_counter(), time.process_time()
    reply = client.event(kind, link=link)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    (r,) = reply.replans
    new = r.outcome == pb.REPLAN_OUTCOME_NEW_VERSION
    if kind == "link-down" and not new:  # the plan used the link: it must move
        raise RuntimeError(f"{spec}: {kind} {link} gave no new version: {r.message}")
    v = client.plan(job_id)
    if not quiet:
        what = (f"plan {v.plan_seconds:.3f}, install {v.install_seconds:.3f}" if new
                else "plan kept: " + r.message)
        print(f"  {spec} {kind} {'-'.join(link)}: {seconds:.3f} s (cpu {cpu:.3f}; {what}; "
              f"rate {v.rate:.4g})", flush=True)
    while client.jobs()[0].draining_version:  # drains at once: no event is deferred
        time.sleep(0.02)
    return {"event": kind, "link": list(link), "seconds": seconds, "cpu_seconds": cpu,
            "new_version": new, "phase": r.phase, "rate": v.rate,
            "plan_seconds": v.plan_seconds if new else 0.0,
            "install_seconds": v.install_seconds if new else 0.0}


@contextmanager
def _switches(topo: Topology, kind: str
              ) -> Iterator[tuple[dict[str, tuple[str, int]], Installer]]:
    if kind == "memory":
        yield ({sw: (f"127.0.0.1:{50000 + i}", i) for i, sw in enumerate(topo.switches, 1)},
               MemoryInstaller())
        return
    with embedded_switches(topo) as where:
        yield where, P4RuntimeInstaller(pipeline_for("embedded"))


def line(r: dict) -> str:
    goal = f"goal <= {r['goal']:g} s, ratio {r['ratio']:.2f}" if r["goal"] else "no goal"
    return (f"{r['name']:28s} {r['value']:7.3f} {r['unit']}  ({goal}; median of {r['events']} "
            f"link-down events, max {r['max']:.3f} s, service cpu {r['cpu_s']:.3f} s; plan "
            f"{r['plan_s']:.3f} s + install {r['install_s']:.3f} s; link back up: "
            f"{r['restore_s']:.3f} s; {r['switches']} switches; load {r['load_avg']:g} on "
            f"{r['cores']} cores)")
