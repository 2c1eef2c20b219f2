"""Run stages of concurrent transfers on SimGrid and return how long each stage's data took.

Platform: one SimGrid link per directed link of the topology (full duplex: each direction its
own link), plus one link per model resource a transfer must also pass (a switch's aggregation
capacity C(v), a PS's ingress capacity B(s)), every one at its spare capacity in bytes/s.
Routes are the transfers' own: each distinct (route, rate bound) gets a source host in a star
zone whose route to the zone's centre is exactly those links, so every flow follows the path
its plan or collective gives it (SimGrid's shortest-path zones could not express per-flow
routes).  A rate bound is a FATPIPE link of that bandwidth on the route (FATPIPE limits each
flow alone, unshared).  All destinations are one sink behind a FATPIPE link.

Sharing: SimGrid's CM02 model with zero link latency and no TCP window (``TCP-gamma`` 0) is
max-min fairness with per-flow bounds; with latencies, CM02 weights each flow by its route's
latency (TCP's RTT unfairness), which would make microsecond hop differences decide shares.
Latency is therefore added by the caller per stage (``Stage.chain_hops`` x hop latency).

SimGrid's engine is a process-wide singleton that cannot be restarted, so every run happens
in a forked child process.
"""

from __future__ import annotations

import multiprocessing
import os
import traceback
from dataclasses import dataclass, field

SINK = "sink"
HUGE_BPS = 1e18  # the sink's FATPIPE: never a constraint


@dataclass(frozen=True)
class Transfer:
    """``size`` bytes from ``path[0]`` to ``path[-1]`` along ``path`` (node ids), also passing
    the model resources ``via``; at most ``bound`` bytes/s when given."""

    path: tuple[str, ...]
    size: float
    bound: float | None = None
    via: tuple[str, ...] = ()


@dataclass
class Stage:
    """Transfers that start together; the stage ends when the last one ends.
    ``chain_hops``: how many store-and-forward hops the stage's data passes one after the
    other (a ring's 2(f-1) steps), so its latency is chain_hops x the longest route's."""

    name: str
    transfers: list[Transfer] = field(default_factory=list)
    chain_hops: int = 1


@dataclass
class Network:
    """Spare capacities in bytes/s: directed links and named model resources."""

    links: dict[tuple[str, str], float]
    resources: dict[str, float] = field(default_factory=dict)


def run_stages(net: Network, stages: list[Stage]) -> list[float]:
    """Seconds each stage's transfers take on ``net`` (bandwidth only), in a child process."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, net, stages))
    proc.start()
    send.close()
    try:
        ok, value = recv.recv()
    except EOFError:
        ok, value = False, "the SimGrid process died without a result"
    proc.join()
    if not ok:
        raise RuntimeError(f"simulation failed: {value}")
    return value


def _child(pipe, net: Network, stages: list[Stage]) -> None:
    try:
        pipe.send((True, _simulate(net, stages)))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises
        pipe.send((False, traceback.format_exc()))
    finally:
        pipe.close()
        os._exit(0)


def _quiet_import():
    """Import simgrid with its start-up log line (written to fd 2) silenced."""
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        import simgrid
    finally:
        os.dup2(saved, 2)
        os.close(null)
        os.close(saved)
    return simgrid


def _simulate(net: Network, stages: list[Stage]) -> list[float]:
    sg = _quiet_import()
    engine = sg.Engine(["inart-simulate", "--log=root.thres:critical",
                        "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                        "--cfg=network/TCP-gamma:0", "--cfg=network/weight-S:0"])
    zone = sg.NetZone.create_star_zone("cluster")
    fatpipe = sg.Link.SharingPolicy.FATPIPE
    links = {}
    for (u, v), bps in net.links.items():
        links[(u, v)] = sg.LinkInRoute(zone.create_link(f"{u}->{v}", bps).seal())
    for name, bps in net.resources.items():
        links[name] = sg.LinkInRoute(zone.create_link(name, bps).seal())
    bounds: dict[float, object] = {}

    def bound_link(rate: float):
        if rate not in bounds:
            link = zone.create_link(f"bound{len(bounds)}", rate)
            link.set_sharing_policy(fatpipe, None)
            bounds[rate] = sg.LinkInRoute(link.seal())
        return bounds[rate]

    sink = zone.create_host(SINK, 1.0).seal()
    sink_link = zone.create_link("sink", HUGE_BPS)
    sink_link.set_sharing_policy(fatpipe, None)
    zone.add_route(sink.netpoint, None, None, None, [sg.LinkInRoute(sink_link.seal())], True)
    sources: dict[tuple, object] = {}
    plan: list[list[tuple[object, int]]] = []
    for stage in stages:
        comms = []
        for t in stage.transfers:
            key = (t.path, t.via, t.bound)
            host = sources.get(key)
            if host is None:
                host = zone.create_host(f"r{len(sources)}", 1.0).seal()
                route = [links[(a, b)] for a, b in zip(t.path, t.path[1:], strict=False)]
                route += [links[r] for r in t.via]
                if t.bound is not None:
                    route.append(bound_link(t.bound))
                zone.add_route(host.netpoint, None, None, None, route, False)
                sources[key] = host
            if t.size >= 1:
                comms.append((host, int(round(t.size))))
        plan.append(comms)
    zone.seal()
    durations: list[float] = []

    def driver() -> None:
        for comms in plan:
            start = engine.clock
            if comms:
                sg.Comm.wait_all([sg.Comm.sendto_async(h, sink, n) for h, n in comms])
            durations.append(engine.clock - start)

    sg.Actor.create("driver", sink, driver)
    engine.run()
    return durations
