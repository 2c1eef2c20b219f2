"""An INA plan's traffic: every flow segment as its own transfer at the plan's rate.

Gradients (the plan's model): a worker sends its x_s share of the gradient to PS s either
straight (a flow ending at s, through B(s)) or to the switch that aggregates it (a flow ending
at v, through C(v)); each switch sends one combined stream per PS on (through B(s)).  Every
segment is paced to f x_s (the hosts pace to the plan's rate; the switch emits one aggregate
per fan-in packets), so the switch's stream runs at its inputs' rate and ends one packet after
them: INA is streamed per packet, so each segment is one continuous transfer, and the
aggregation's coupling costs one packet time, added with the latency.  Results: each PS sends
its updated shard down a BFS tree through the switches to every worker, each tree link once
(control_plane/deploy/entries.py ``multicast``), at the same rate.

Bytes are INA frames: a shard of B bytes is ceil(B / 4N) packets of ``packet_len(N)`` bytes
plus Ethernet, IPv4 and UDP headers, which is what the hosts pace and the links count.
"""

from __future__ import annotations

import math
from collections import deque

from control_plane.model.plan import Plan
from control_plane.model.topology import natural_key
from host_stack.ina import wire
from host_stack.ina.pacing import FRAME_OVERHEAD
from simulation.engine import Stage, Transfer

FRAME = wire.packet_len(wire.DEFAULT_N) + FRAME_OVERHEAD  # bytes of one INA packet on a link
PAYLOAD = 4 * wire.DEFAULT_N  # gradient bytes it carries


def shard_frames(model_bytes: int, share: float) -> int:
    """Frame bytes of one worker's ``share`` of the gradient (whole packets)."""
    return math.ceil(model_bytes * share / PAYLOAD) * FRAME


def result_tree(plan: Plan, ps: str) -> list[tuple[str, str]]:
    """Directed links of the PS's RESULT multicast tree (BFS through switches, natural order)."""
    topo, graph = plan.topology, plan.topology.graph
    parent, queue = {ps: ps}, deque([ps])
    while queue:
        node = queue.popleft()
        if node != ps and topo.nodes[node].kind != "switch":
            continue
        for nb in sorted(graph[node], key=natural_key):
            if nb not in parent:
                parent[nb] = node
                queue.append(nb)
    edges: set[tuple[str, str]] = set()
    for w in topo.workers:
        node = w
        while node != ps and (parent[node], node) not in edges:
            edges.add((parent[node], node))
            node = parent[node]
    return sorted(edges)


def ina_stage(plan: Plan, model_bytes: int, unit_bps: float, pace: float = 1.0,
              results: bool = True) -> Stage:
    """One stage: gradients up (flows and streams) and, with ``results``, results down, all
    at once (the PSs return each chunk as it completes)."""
    stage = Stage("ina")
    for flow in plan.flows:
        share = plan.partition[flow.ps]
        rate = pace * plan.rate * share * unit_bps / 8
        via = (f"agg:{flow.aggregate_at}",) if flow.aggregate_at else (f"ps:{flow.ps}",)
        stage.transfers.append(Transfer(tuple(flow.path), shard_frames(model_bytes, share),
                                        rate, via))
    for stream in plan.streams:
        share = plan.partition[stream.ps]
        rate = pace * plan.rate * share * unit_bps / 8
        stage.transfers.append(Transfer(tuple(stream.path), shard_frames(model_bytes, share),
                                        rate, (f"ps:{stream.ps}",)))
    for ps, share in plan.partition.items():
        if share <= 0 or not results:
            continue
        rate = pace * plan.rate * share * unit_bps / 8
        for u, v in result_tree(plan, ps):
            stage.transfers.append(Transfer((u, v), shard_frames(model_bytes, share), rate))
    stage.route_hops = chain_hops(plan, results)
    return stage


def chain_hops(plan: Plan, results: bool = True) -> int:
    """Link hops of the longest dependency chain: a worker's last packet to its switch, the
    switch's aggregate on to the PS (or the worker's own path to it), and, with ``results``,
    the PS's result back down its tree to that worker.  The segments follow one another, so
    the chain, not its longest segment, is what the hop latency multiplies."""
    streams = {(st.switch, st.ps): len(st.path) - 1 for st in plan.streams}
    depth: dict[str, dict[str, int]] = {}
    if results:
        for ps, share in plan.partition.items():
            if share <= 0:
                continue
            parent = {v: u for u, v in result_tree(plan, ps)}
            depth[ps] = {}
            for w in plan.topology.workers:
                node, hops = w, 0
                while node != ps:
                    node, hops = parent[node], hops + 1
                depth[ps][w] = hops
    longest = 0
    for flow in plan.flows:
        if plan.partition.get(flow.ps, 0) <= 0:
            continue
        hops = len(flow.path) - 1
        if flow.aggregate_at:
            hops += streams[(flow.aggregate_at, flow.ps)]
        if results:
            hops += depth[flow.ps][flow.worker]
        longest = max(longest, hops)
    return longest


def plan_comm_time(plan: Plan, model_bytes: int, unit_bps: float) -> float:
    """What the plan promises: the slowest PS shard's frames at f x_s (latency aside)."""
    return max(shard_frames(model_bytes, x) * 8 / (plan.rate * x * unit_bps)
               for x in plan.partition.values() if x > 0)
