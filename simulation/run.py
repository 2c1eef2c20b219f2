"""`simulate`: one scheme on one topology, one iteration's communication simulated on SimGrid.

Units: the topology's capacities are in its own units; ``link_gbps`` makes its fastest link
that many Gbit/s (every capacity scaled alike: links, C(v), B(s)), ``scale_mbps`` gives Mbit/s
per unit as the emulation's ``--scale`` does, and with neither one unit is 1 Gbit/s.  Every
link adds ``latency_us`` per hop (default 1 us) on each dependency chain, and every host
message of a collective on it ``host_overhead_us`` (default ``DEFAULT_HOST_OVERHEAD_US``,
gloo's measured time per message, simulation/host_cost.py; 0 gives ideal hosts).  The RAT
tree runs rank by rank (simulation/ranks.py; above ``TREE_PHASES_ABOVE`` transfers in
phases, simulation/phases.py), the rest stage by stage (simulation/engine.py).  An iteration
is compute then communication (no overlap); a deterministic fluid model makes every
iteration alike, so one is simulated and ``iterations`` multiplies.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from control_plane.model.plan import Plan
from control_plane.model.topology import Topology
from simulation import collectives, ina
from simulation.engine import Network, Stage, run_stages
from simulation.gloo_rings import run_gloo_rings
from simulation.host_cost import DEFAULT_HOST_OVERHEAD_US
from simulation.phases import run_phases
from simulation.ranks import run_ranks
from simulation.routes import ROUTINGS

INA_SCHEMES = ("inart", "r-inart", "atp", "lbmm")
COLLECTIVES = ("ring", "tree", "rsgcm")
SCHEMES = (*INA_SCHEMES, *COLLECTIVES)
DEFAULT_LATENCY_US = 1.0
# RSGCM message by message up to this many data messages (fattree:8, ResNet-50: 53,320 in
# 19 s of wall time on a shared 2-core VM; each costs SimGrid's Python actors about five
# thread switches), each step's transfers rank by rank above
RSGCM_MESSAGE_LIMIT = 60_000
# the tree in phases above this many transfers in all (fattree:20: 189,064, 81 s of wall time
# as one run on a shared 2-core VM; fattree:24: 394,056; simulation/phases.py)
TREE_PHASES_ABOVE = 200_000


@dataclass
class SchemeResult:
    """One scheme's simulated iteration; bytes are per iteration, times in seconds."""

    scheme: str
    topology: str
    workers: int
    model_bytes: int
    unit_bps: float
    link_gbps: float
    comm_time_s: float
    compute_s: float
    iteration_time_s: float
    iterations: int
    total_time_s: float
    rate_per_worker_bps: float
    worker_bytes: float  # mean bytes a worker put on its link
    ps_ingress_bytes: dict[str, float]
    link_bytes: dict[str, float]
    wall_s: float
    plan_rate_bps: float | None = None
    plan_comm_time_s: float | None = None
    note: str = ""
    host_overhead_us: float = 0.0
    stages: list[dict[str, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class SimulationError(ValueError):
    """Arguments that cannot be simulated; the message names the one at fault."""


def unit_bps(topo: Topology, link_gbps: float | None, scale_mbps: float | None) -> float:
    """Bit/s per topology unit (see the module docstring)."""
    if link_gbps is not None and scale_mbps is not None:
        raise SimulationError("link_gbps and scale_mbps: give at most one")
    if link_gbps is not None:
        if not link_gbps > 0:
            raise SimulationError(f"link_gbps={link_gbps!r}: expected > 0")
        return link_gbps * 1e9 / max(link.capacity for link in topo.links.values())
    if scale_mbps is not None:
        if not scale_mbps > 0:
            raise SimulationError(f"scale_mbps={scale_mbps!r}: expected > 0")
        return scale_mbps * 1e6
    return 1e9


def network(topo: Topology, unit: float) -> Network:
    """Spare capacities in bytes/s, with C(v) as agg:v and B(s) as ps:s."""
    links = {key: max(link.spare, 0.0) * unit / 8 for key, link in topo.links.items()}
    res = {}
    for node in topo.nodes.values():
        if node.kind == "switch" and node.capacity is not None:
            res[f"agg:{node.id}"] = max(node.spare, 0.0) * unit / 8
        elif node.kind == "ps" and node.capacity is not None:
            res[f"ps:{node.id}"] = max(node.spare, 0.0) * unit / 8
    return Network(links, res)


def _plan(topology: Topology, scheme: str, plan: dict | Plan | None, seed: int) -> Plan:
    if plan is None:
        from control_plane.solver.solve import plan_for

        return plan_for(topology, scheme, seed)
    p = plan if isinstance(plan, Plan) else Plan.from_dict(plan)
    differs = cluster_difference(p.topology, topology)
    if differs:
        raise SimulationError(f"plan: its cluster differs from topology {topology.name}'s "
                              f"({differs}): give the --ps/--workers/--preset/--seed the plan "
                              f"was made with")
    if not p.rate > 0:
        raise SimulationError(f"plan 'rate'={p.rate!r}: expected > 0 (nothing to run)")
    return p


def cluster_difference(planned: Topology, built: Topology) -> str:
    """The first way two clusters differ ('' if none): a plan for one must not run on the
    other, where the collectives beside it would see other PSs and workers."""
    for node_id in sorted(set(planned.nodes) | set(built.nodes)):
        a, b = planned.nodes.get(node_id), built.nodes.get(node_id)
        if a is None or b is None:
            return f"node {node_id} only in the {'topology' if a is None else 'plan'}"
        if a.kind != b.kind:
            return f"node {node_id} is a {a.kind} in the plan, a {b.kind} in the topology"
    for key in sorted(set(planned.links) | set(built.links)):
        a, b = planned.links.get(key), built.links.get(key)
        if a is None or b is None:
            link = a or b
            return (f"link {link.src}->{link.dst} only in the "
                    f"{'topology' if a is None else 'plan'}")
        if a.capacity != b.capacity:
            return f"link {a.src}->{a.dst}: capacity {a.capacity:g} in the plan, " \
                   f"{b.capacity:g} in the topology"
    return ""


def simulate(topology: Topology, scheme: str, *, plan: dict | Plan | None = None,
             model_bytes: int, compute_s: float = 0.0, link_gbps: float | None = None,
             latency_us: float | None = None, iterations: int = 1, seed: int = 0,
             scale_mbps: float | None = None, pace: float = 1.0,
             results: bool = True, routing: str = "ecmp",
             host_overhead_us: float | None = None,
             sender_pps: float | None = None) -> SchemeResult:
    """Simulate ``scheme`` (INA: its plan, given or solved with ``seed``) on ``topology``.
    ``results=False`` leaves the PSs' result multicast out of INA schemes: the gradients
    alone, which is what a plan's rate is about (its check).  ``routing``: the collectives'
    routes, ``ecmp`` or ``dst`` (the emulation's; simulation/routes.py).
    ``host_overhead_us``: each collective's host time per message (None: the measured
    ``DEFAULT_HOST_OVERHEAD_US``; INA schemes pay none, their hosts send paced datagrams).
    ``sender_pps``: the INA senders' packet rate where their host stack cannot keep the plan's
    pace (simulation/hardware.py host presets; None: they keep it)."""
    t0 = time.perf_counter()
    if scheme not in SCHEMES:
        raise SimulationError(f"scheme {scheme!r}: expected one of {', '.join(SCHEMES)}")
    if isinstance(model_bytes, bool) or not isinstance(model_bytes, int) or model_bytes <= 0:
        raise SimulationError(f"model_bytes={model_bytes!r}: expected an integer > 0")
    if not compute_s >= 0:
        raise SimulationError(f"compute_s={compute_s!r}: expected >= 0")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise SimulationError(f"iterations={iterations!r}: expected an integer >= 1")
    if routing not in ROUTINGS:
        raise SimulationError(f"routing={routing!r}: expected one of {', '.join(ROUTINGS)}")
    if not pace > 0:
        raise SimulationError(f"pace={pace!r}: expected > 0")
    latency_s = (DEFAULT_LATENCY_US if latency_us is None else latency_us) * 1e-6
    if latency_s < 0:
        raise SimulationError(f"latency_us={latency_us!r}: expected >= 0")
    if host_overhead_us is None:
        host_overhead_us = DEFAULT_HOST_OVERHEAD_US
    if isinstance(host_overhead_us, bool) or not isinstance(host_overhead_us, (int, float)) \
            or not host_overhead_us >= 0:
        raise SimulationError(f"host_overhead_us={host_overhead_us!r}: expected a number >= 0")
    overhead_s = host_overhead_us * 1e-6
    topo, note, tail = topology, "", 0.0
    plan_rate = plan_comm = None
    if scheme in INA_SCHEMES:
        p = _plan(topology, scheme, plan, seed)
        topo = p.topology
        unit = unit_bps(topo, link_gbps, scale_mbps)
        if sender_pps is not None:
            if not sender_pps > 0:
                raise SimulationError(f"sender_pps={sender_pps!r}: expected > 0")
            pace = min(pace, sender_pps * ina.FRAME * 8 / (p.rate * unit))
        stages = [ina.ina_stage(p, model_bytes, unit, pace, results)]
        plan_rate = p.rate * unit
        plan_comm = ina.plan_comm_time(p, model_bytes, unit)
        # the aggregate leaves a switch one packet after its last input arrives
        slowest = min(x for x in p.partition.values() if x > 0) * plan_rate * pace
        tail = ina.FRAME * 8 / slowest
        workers = topo.workers
    else:
        unit = unit_bps(topo, link_gbps, scale_mbps)
        workers = topo.workers
        if scheme == "ring":
            stages = collectives.ring_stages(topo, workers, model_bytes, routing)
        elif scheme == "tree":
            stages = collectives.tree_stages(topo, workers, model_bytes, routing)
        else:
            rings, paths, stages, kind = collectives.rsgcm_rings(topo, workers, model_bytes,
                                                                 seed, routing)
            note = f"schedule: {kind}"
    net = network(topo, unit)
    if scheme == "tree" and sum(len(st.transfers) for st in stages) > TREE_PHASES_ABOVE:
        stage_rows, comm = _by_rank(net, stages, overhead_s, latency_s, run_phases)
        note = "rank by rank in phases"
    elif scheme == "tree":
        stage_rows, comm = _by_rank(net, stages, overhead_s, latency_s)
    elif scheme == "rsgcm" and collectives.gloo_messages(rings) <= RSGCM_MESSAGE_LIMIT:
        ends = run_gloo_rings(net, rings, paths, latency_s, overhead_s) if rings else []
        stage_rows = [{"stage": st.name, "end_s": end, "transfers": len(st.transfers)}
                      for st, end in zip(stages, ends, strict=True)]
        comm = max(ends, default=0.0)
        note += ", message by message"
    elif scheme == "rsgcm":
        stage_rows, comm = _by_rank(net, stages, overhead_s, latency_s)
        note += ", step by step"
    else:
        stage_rows, comm = _in_lockstep(net, stages, overhead_s, latency_s)
    comm += tail
    links, ps_in, sent = _bytes(stages, topo)
    worker_bytes = sum(sent.get(w, 0.0) for w in workers) / len(workers)
    iteration = compute_s + comm
    return SchemeResult(
        scheme=scheme, topology=topology.name, workers=len(workers), model_bytes=model_bytes,
        unit_bps=unit, link_gbps=max(lk.capacity for lk in topo.links.values()) * unit / 1e9,
        comm_time_s=comm, compute_s=compute_s, iteration_time_s=iteration,
        iterations=iterations, total_time_s=iteration * iterations,
        rate_per_worker_bps=worker_bytes * 8 / comm if comm > 0 else 0.0,
        worker_bytes=worker_bytes, ps_ingress_bytes=ps_in, link_bytes=links,
        wall_s=time.perf_counter() - t0, plan_rate_bps=plan_rate, plan_comm_time_s=plan_comm,
        note=note, host_overhead_us=host_overhead_us, stages=stage_rows)


def _delays(stage: Stage, overhead_s: float, latency_s: float) -> tuple[float, float]:
    """(hop latency, host time) the stage's dependency chain adds to its data's time."""
    if stage.route_hops is not None:
        return stage.route_hops * latency_s, stage.messages * overhead_s
    hops = max((len(t.path) - 1 for t in stage.transfers), default=0)
    return stage.chain_hops * latency_s * hops, stage.messages * overhead_s


def _in_lockstep(net: Network, stages: list[Stage], overhead_s: float, latency_s: float
                 ) -> tuple[list[dict[str, Any]], float]:
    """Stage after stage: (a row per stage, seconds in all)."""
    rows, comm = [], 0.0
    for stage, secs in zip(stages, run_stages(net, stages), strict=True):
        lat, host = _delays(stage, overhead_s, latency_s)
        rows.append({"stage": stage.name, "bandwidth_s": secs, "latency_s": lat,
                     "host_s": host, "transfers": len(stage.transfers)})
        comm += secs + lat + host
    return rows, comm


def _by_rank(net: Network, stages: list[Stage], overhead_s: float, latency_s: float,
             runner: Callable[[Network, list[Stage]], list[float]] = run_ranks
             ) -> tuple[list[dict[str, Any]], float]:
    """Every rank at its own pace (simulation/ranks.py, or ``runner``'s phases): (a row per
    stage, with the time its last transfer was in, seconds in all).  The chain passes every
    stage once, so each stage's latency and host time add once."""
    rows, delay, end = [], 0.0, 0.0
    for stage, secs in zip(stages, runner(net, stages), strict=True):
        lat, host = _delays(stage, overhead_s, latency_s)
        delay += lat + host
        end = max(end, secs + delay)
        rows.append({"stage": stage.name, "end_s": end, "latency_s": lat, "host_s": host,
                     "transfers": len(stage.transfers)})
    return rows, end


def _bytes(stages: list[Stage], topo: Topology
           ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Bytes per directed link, into each PS, and sent by each host, over all stages."""
    links: dict[str, float] = defaultdict(float)
    sent: dict[str, float] = defaultdict(float)
    ps_in = {s: 0.0 for s in topo.pss}
    for stage in stages:
        for t in stage.transfers:
            for a, b in zip(t.path, t.path[1:], strict=False):
                links[f"{a}->{b}"] += t.size
                if t.acks:
                    links[f"{b}->{a}"] += t.acks
            sent[t.path[0]] += t.size
            sent[t.path[-1]] += t.acks
            if t.path[-1] in ps_in:
                ps_in[t.path[-1]] += t.size
    return dict(links), ps_in, dict(sent)
