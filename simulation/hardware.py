"""Hardware presets: the two numbers that decide whether INA beats a collective, with sources.

A switch preset gives each switch's aggregation capacity C(v) in bit/s of the INA frames the
simulation counts (N = ``ina.PAYLOAD / 4`` values a frame); a host preset gives the hosts'
own time per collective message (what a ring's 2(n-1) sequential steps pay) and, where
measured, the packet rate of the INA host stack's senders.  Every number carries the text of
its source, printed by ``inart simulate --preset NAME --explain``, so a result says which
hardware it is about.  ``--preset SWITCH,HOST`` picks one of each (either may be left out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from control_plane.model.topology import Node, Topology
from host_stack.ina import wire
from host_stack.ina.pacing import FRAME_OVERHEAD
from simulation.host_cost import DEFAULT_HOST_OVERHEAD_US
from simulation.host_cost import SOURCE as GLOO_SOURCE
from simulation.ina import FRAME, PAYLOAD


@dataclass(frozen=True)
class Figure:
    """One number, its unit and where it comes from."""

    value: float
    unit: str
    source: str


@dataclass(frozen=True)
class SwitchPreset:
    """C(v) as a share of the switch's fastest link (``link_share``), or from a packet rate
    (``pps``, INA packets of ``values`` values a second; Tofino's also bounded by its ports,
    passes per chunk and recirculation port)."""

    name: str
    summary: str
    figures: dict[str, Figure]

    def capacity_bps(self, degree: int, link_bps: float) -> float:
        """C(v) in bit/s of simulated INA frames for a switch with ``degree`` ports at
        ``link_bps``."""
        f = {k: v.value for k, v in self.figures.items()}
        if "link_share" in f:
            return f["link_share"] * link_bps
        # a packet of `values` values carries values/N_sim simulated frames' gradient
        frame_bits = 8 * FRAME * f["values"] * 4 / PAYLOAD
        if "pipes" not in f:
            return f["pps"] * frame_bits
        fan_in = max(degree // 2, 1)  # a fat-tree switch's down ports: the most that converge
        ports = degree * link_bps
        pipeline = f["pps"] * fan_in / (fan_in + f["extra_passes"]) * frame_bits
        recirc_pps = f["recirc_gbps"] * 1e9 / (8 * (f["frame_bytes"] + f["recirc_header"]))
        harvest = f["pipes"] * recirc_pps * fan_in * frame_bits
        return min(ports, pipeline, harvest)


@dataclass(frozen=True)
class HostPreset:
    """A collective's host time per message, and the INA senders' packet rate (None: they
    keep the plan's pace)."""

    name: str
    summary: str
    message_us: Figure
    ina_pps: Figure | None = None


_TNA_N = 64  # p4src/build/tna/build-info.json "N"
_TNA_FRAME = wire.packet_len(_TNA_N) + FRAME_OVERHEAD
_BENCH_TARGET = ("`sudo inart bench target --runs 4`, workload ina (p4src inart.p4, N=32, "
                 "fan-in 4), highest offered rate with < 0.1% loss, median of 4 alternating "
                 "runs, project's shared 2-core VM (AMD EPYC), load 6-11, table of "
                 "docs/performance.md, 26 Nov 2026")

SWITCHES: dict[str, SwitchPreset] = {
    "paper": SwitchPreset("paper", "the InArt paper's emulation: C(v) = 45% of a link", {
        "link_share": Figure(9 / 20, "x link", "InArt paper's emulation, switch 9 of a 20 "
                             "Mbit/s link (control_plane/model/topologies.py PRESETS "
                             "homogeneous)")}),
    "tofino1": SwitchPreset("tofino1", "Tofino 1 running p4src/tna/inart.p4 (TNA build)", {
        "values": Figure(_TNA_N, "values/packet", "p4src/build/tna/build-info.json N=64"),
        "frame_bytes": Figure(_TNA_FRAME, "B", f"INA frame with 64 values: "
                              f"{wire.packet_len(_TNA_N)} B packet + {FRAME_OVERHEAD} B "
                              f"Ethernet, IPv4, UDP (payload share "
                              f"{4 * _TNA_N / _TNA_FRAME:.1%}; the simulated N=32 frame: "
                              f"{PAYLOAD / FRAME:.1%})"),
        "pps": Figure(4.8e9, "packets/s", "cited vendor figure, not measured here: the "
                      "4.8 billion packets/s quoted for Tofino 1 (4 pipes, one packet per "
                      "clock each at about 1.2 GHz), not checked against a datasheet; "
                      "Barefoot's launch (June 2016) states 6.5 Tbit/s"),
        "pipes": Figure(4, "pipes", "Tofino 1: 4 pipelines, 16 x 100G ports each"),
        "extra_passes": Figure(2, "passes/chunk", "p4src/tna/inart.p4: a chunk's first "
                               "packet is resubmitted once (claim), its last recirculated "
                               "once (harvest of v32..v63)"),
        "recirc_gbps": Figure(100, "Gbit/s", "p4src/tna/inart.p4: the harvest goes round the "
                              "pipe's recirculation port 68, one 100G port per pipe"),
        "recirc_header": Figure(9, "B", "p4src/tna/inart.p4 recirc_h (kind 8 + idx 32 + "
                                "guard_mask 32 bits) in front of the harvested packet"),
    }),
    "bmv2": SwitchPreset("bmv2", "bmv2 simple_switch_grpc 1.15.5, performance build", {
        "values": Figure(wire.DEFAULT_N, "values/packet", "p4src/build/inart.json N=32"),
        "pps": Figure(2311, "packets/s", f"bmv2 loss-free INA rate, {_BENCH_TARGET}")}),
    "embedded": SwitchPreset("embedded", "inart's embedded P4 target (Python)", {
        "values": Figure(wire.DEFAULT_N, "values/packet", "p4src/build/inart.json N=32"),
        "pps": Figure(19425, "packets/s", f"embedded loss-free INA rate, {_BENCH_TARGET}")}),
}

_TRANSPORT = ("`sudo inart bench transport`, INA transport over a veth pair into a "
              "namespace (one worker, one PS, N=32), three runs 32k-60k packets/s, lowest "
              "taken; project's shared 2-core VM, load 6-12, docs/performance.md, "
              "26 Nov 2026")
HOSTS: dict[str, HostPreset] = {
    "ideal": HostPreset("ideal", "hosts that cost nothing (the network alone)",
                        Figure(0.0, "us/message", "by definition")),
    "gloo": HostPreset("gloo", "gloo on CPU hosts (measured)",
                       Figure(DEFAULT_HOST_OVERHEAD_US, "us/message",
                              f"half the median ping-pong round trip, {GLOO_SOURCE}")),
    "nccl": HostPreset("nccl", "NCCL-class GPU hosts (cited)",
                       Figure(9.6, "us/message", "NVIDIA NCCL 2.x src/graph/tuning.cc "
                              "hwLat[NET][Ring][Simple] = 9.6 us per inter-node ring step "
                              "(its cost model's latency for large all-reduces)")),
    "inart-stack": HostPreset("inart-stack", "CPU hosts: gloo collectives, inart's own INA "
                              "host stack (both measured)",
                              Figure(DEFAULT_HOST_OVERHEAD_US, "us/message",
                                     f"half the median ping-pong round trip, "
                                     f"{GLOO_SOURCE}"),
                              Figure(32_000, "packets/s", _TRANSPORT)),
}


class PresetError(ValueError):
    """A preset name that is not known; the message lists the accepted ones."""


def parse(spec: str) -> tuple[SwitchPreset | None, HostPreset | None]:
    """``SWITCH``, ``HOST`` or ``SWITCH,HOST`` -> the presets (None where not given)."""
    switch = host = None
    for name in (n.strip() for n in spec.split(",")):
        if name in SWITCHES and switch is None:
            switch = SWITCHES[name]
        elif name in HOSTS and host is None:
            host = HOSTS[name]
        else:
            raise PresetError(f"--preset {spec!r}: {name!r} is not a preset (or given twice); "
                              f"expected a switch preset ({', '.join(SWITCHES)}) and/or a "
                              f"host preset ({', '.join(HOSTS)}), comma-separated")
    return switch, host


def with_switches(topo: Topology, preset: SwitchPreset, unit_bps: float) -> Topology:
    """``topo`` with every switch's C(v) set by ``preset`` (in topology units of
    ``unit_bps``); links, PSs and roles unchanged."""
    graph = topo.graph
    nodes = []
    for node in topo.nodes.values():
        if node.kind == "switch":
            fastest = max(topo.links[(node.id, nb)].capacity for nb in graph[node.id])
            cap = preset.capacity_bps(graph.degree(node.id), fastest * unit_bps) / unit_bps
            node = replace(node, capacity=cap)
        nodes.append(Node(node.id, node.kind, node.capacity, node.background))
    return Topology(nodes, list(topo.links.values()), name=topo.name)


def preset_of(topo: Topology, unit_bps: float) -> str | None:
    """The switch preset whose C(v) every switch of ``topo`` already has at ``unit_bps`` a
    topology unit (the one the plans solved on ``topo`` assume), or None."""
    for name, preset in SWITCHES.items():
        mine = with_switches(topo, preset, unit_bps)
        if all(math.isclose(mine.nodes[v].capacity, topo.nodes[v].capacity, rel_tol=1e-9)
               for v in topo.switches):
            return name
    return None


def explain(switch: SwitchPreset | None, host: HostPreset | None, degree: int | None = None,
            link_bps: float | None = None) -> list[str]:
    """One line per number: name, value, unit, source; and C(v) for ``degree`` ports at
    ``link_bps`` when given."""
    lines = []
    if switch is not None:
        lines.append(f"switch preset {switch.name}: {switch.summary}")
        lines += [f"  {k} = {f.value:g} {f.unit}  [{f.source}]"
                  for k, f in switch.figures.items()]
        if degree and link_bps:
            cap = switch.capacity_bps(degree, link_bps)
            lines.append(f"  C(v) = {cap / 1e9:.6g} Gbit/s of INA frames for a {degree}-port "
                         f"switch at {link_bps / 1e9:g} Gbit/s ({cap / link_bps:.4g} x link)")
    if host is not None:
        lines.append(f"host preset {host.name}: {host.summary}")
        lines.append(f"  message_us = {host.message_us.value:g} {host.message_us.unit}  "
                     f"[{host.message_us.source}]")
        if host.ina_pps is not None:
            lines.append(f"  ina_pps = {host.ina_pps.value:g} {host.ina_pps.unit}  "
                         f"[{host.ina_pps.source}]")
    return lines
