"""Run stages of concurrent transfers on SimGrid and return how long each stage's data took.

Platform: one SimGrid link per directed link of the topology (full duplex: each direction its
own link), plus one link per model resource a transfer must also pass (a switch's aggregation
capacity C(v), a PS's ingress capacity B(s)), every one at its spare capacity in bytes/s.
Routes are the transfers' own: each distinct (route, rate bound) gets a source host in a star
zone whose route to the zone's centre is exactly those links, so every flow follows the path
its plan or collective gives it (SimGrid's shortest-path zones could not express per-flow
routes).  A rate bound is a FATPIPE link of that bandwidth, private to the route (FATPIPE
limits each flow alone).  Every transfer ends at one
sink whose route has no link: a link there, even a FATPIPE one that never limits, would be a
constraint of every flow, which SimGrid's solver walks whenever it fixes a flow's rate, and
would join flows that share no link into one system that every event re-solves.

Sharing: SimGrid's CM02 model with zero link latency and no TCP window (``TCP-gamma`` 0) is
max-min fairness with per-flow bounds; with latencies, CM02 weights each flow by its route's
latency (TCP's RTT unfairness), which would make microsecond hop differences decide shares.
Latency is therefore added by the caller per stage (``Stage.chain_hops`` x hop latency).

Scale: every flow that ends at its own time costs SimGrid one re-solve of every flow it
shares a bottleneck with (4,740 flows of RAT's second stage on fattree:12 ended at 1,568
distinct times: 79 s).  Each stage is therefore simulated in its own time unit, its lower
bound (the most loaded link's bytes over its capacity), and flows that end within
``PRECISION`` of that unit of each other end together (SimGrid's ``surf/precision``): 198
events, 7 s, and the stage's time off by 0.1% on that stage.  SimGrid 3.32 also removes each
finished host-to-host communication from one list of all of them by walking it, so a stage of
N transfers costs N^2/2 steps (255,360 on RAT's fattree:32 pod stage; docs/simulation.md).

SimGrid's engine is a process-wide singleton that cannot be restarted, so every run happens
in a forked child process.  Its Python actors are threads, one running at a time, handing
over to SimGrid's maestro thread at every simcall; the child keeps them all on one CPU, where
a handover is a switch on that CPU rather than a wake-up of another (`inart bench simulate
-k 16 --scheme tree` on a shared 2-core VM: 11.8 s of wall time, 5.5 s user and 3.8 s
system pinned; 43.3 s, 8.2 s and 7.2 s not; docs/where-ina-wins.md).
"""

from __future__ import annotations

import multiprocessing
import os
import traceback
from dataclasses import dataclass, field

SINK = "sink"
PRECISION = 5e-3  # of a stage's lower bound: flows ending this close together end together


@dataclass(frozen=True)
class Transfer:
    """``size`` bytes from ``path[0]`` to ``path[-1]`` along ``path`` (node ids), also passing
    the model resources ``via`` (those the network has; the others are unlimited); at most
    ``bound`` bytes/s when given.  ``acks``: bytes the
    receiver returns on the reverse route (TCP ACKs): counted on the reverse links, but
    simulated as part of the transfer itself (2% of it), because thousands of tiny flows each
    ending at its own time would cost SimGrid one re-solve each."""

    path: tuple[str, ...]
    size: float
    bound: float | None = None
    via: tuple[str, ...] = ()
    acks: float = 0.0


@dataclass
class Stage:
    """Transfers that start together; the stage ends when the last one ends.
    ``chain_hops``: how many store-and-forward hops the stage's data passes one after the
    other (a ring's 2(f-1) steps), so its latency is chain_hops x the longest route's.
    ``messages``: how many host messages its dependency chain passes one after the other,
    each paying the host's own time per message once (``simulate(host_overhead_us=...)``).
    ``route_hops``: the chain's own hop count where the stage knows it (INA: a worker's flow,
    its switch's stream to the PS, the result's way back), instead of chain_hops x the
    longest single route, which misses the segments that follow one another."""

    name: str
    transfers: list[Transfer] = field(default_factory=list)
    chain_hops: int = 1
    messages: int = 0
    route_hops: int | None = None


@dataclass
class Network:
    """Spare capacities in bytes/s: directed links and named model resources."""

    links: dict[tuple[str, str], float]
    resources: dict[str, float] = field(default_factory=dict)


def run_stages(net: Network, stages: list[Stage]) -> list[float]:
    """Seconds each stage's transfers take on ``net`` (bandwidth only), in a child process."""
    return in_child(_simulate, net, stages)


def in_child(fn, *args):
    """``fn(*args)`` in a forked child process (SimGrid's engine runs once per process)."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args))
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


def one_cpu() -> None:
    """Bind this process (and the threads it starts) to the CPU it runs on now."""
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        return
    try:  # field 39 of /proc/self/stat: the CPU last run on
        here = int(open("/proc/self/stat").read().rpartition(")")[2].split()[36])
    except (OSError, ValueError, IndexError):
        here = min(cpus)
    os.sched_setaffinity(0, {here if here in cpus else min(cpus)})


def _child(pipe, fn, args) -> None:
    try:
        one_cpu()
        pipe.send((True, fn(*args)))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises
        pipe.send((False, traceback.format_exc()))
    finally:
        pipe.close()
        os._exit(0)


def lower_bound(net: Network, stage: Stage) -> float:
    """Seconds the stage takes at least: its most loaded link or resource, or a flow alone at
    its bound (1 when it moves nothing)."""
    load: dict[object, float] = {}
    slowest = 0.0
    for t in stage.transfers:
        size = t.size + t.acks
        for key in [*zip(t.path, t.path[1:], strict=False),
                    *(r for r in t.via if r in net.resources)]:
            load[key] = load.get(key, 0.0) + size
        if t.bound:
            slowest = max(slowest, size / t.bound)
    caps = {**net.links, **net.resources}
    bound = max([slowest, *(b / caps[k] for k, b in load.items() if caps[k] > 0)])
    return bound if bound > 0 else 1.0


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


def new_engine(precision: float = PRECISION):
    """(simgrid, its engine) with the sharing model of the module docstring; flows ending
    within ``precision`` (in the run's time unit) of each other end together."""
    sg = _quiet_import()
    engine = sg.Engine(["inart-simulate", "--log=root.thres:critical",
                        "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                        "--cfg=network/TCP-gamma:0", "--cfg=network/weight-S:0",
                        f"--cfg=surf/precision:{precision}"])
    return sg, engine


def _simulate(net: Network, stages: list[Stage]) -> list[float]:
    sg, engine = new_engine()
    zone = sg.NetZone.create_star_zone("cluster")
    fatpipe = sg.Link.SharingPolicy.FATPIPE
    links = {}
    for (u, v), bps in net.links.items():
        links[(u, v)] = sg.LinkInRoute(zone.create_link(f"{u}->{v}", bps).seal())
    for name, bps in net.resources.items():
        links[name] = sg.LinkInRoute(zone.create_link(name, bps).seal())
    sink = zone.create_host(SINK, 1.0).seal()
    zone.add_route(sink.netpoint, None, None, None, [], True)  # no link: see the module
    sources: dict[tuple, object] = {}
    plan: list[list[tuple[object, object, int]]] = []
    units: list[float] = []
    for stage in stages:
        unit = lower_bound(net, stage)
        units.append(unit)
        comms = []
        for t in stage.transfers:
            key = (t.path, t.via, t.bound)
            found = sources.get(key)
            if found is None:
                i = len(sources)
                host = zone.create_host(f"r{i}", 1.0).seal()
                route = [links[(a, b)] for a, b in zip(t.path, t.path[1:], strict=False)]
                route += [links[r] for r in t.via if r in links]  # absent: no capacity
                if t.bound is not None:  # its own link: a shared one is quadratic (above)
                    link = zone.create_link(f"bound{i}", t.bound)
                    link.set_sharing_policy(fatpipe, None)  # each of its flows alone
                    route.append(sg.LinkInRoute(link.seal()))
                zone.add_route(host.netpoint, None, None, None, route, False)
                found = sources[key] = (host, sink)
            if t.size + t.acks >= 1:
                comms.append((*found, max(1, int(round((t.size + t.acks) / unit)))))
        plan.append(comms)
    zone.seal()
    durations: list[float] = []

    def driver() -> None:
        for comms, unit in zip(plan, units, strict=True):
            start = engine.clock
            if comms:
                sg.Comm.wait_all([sg.Comm.sendto_async(h, d, n) for h, d, n in comms])
            durations.append((engine.clock - start) * unit)

    sg.Actor.create("driver", sink, driver)
    engine.run()
    return durations
