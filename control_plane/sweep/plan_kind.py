"""The ``plan`` kind: one scheme solved on one topology, what `inart plan` prints for it, and
the communication time its rate gives the model (cheap and exact: a sweep of solver quality,
or the plans' side of a simulation or emulation sweep)."""

from __future__ import annotations

from typing import Any

from control_plane.model.topologies import build_topology
from control_plane.model.topology import Topology
from control_plane.solver.solve import solve
from control_plane.sweep.grid import model_bytes

UNIT_BPS = 1e6  # without a link speed one capacity unit is 1 Mbit/s, as in `inart plan`


def unit_bps(topology: Topology, link_gbps: float | None) -> float:
    """Bit/s of one capacity unit: the topology's fastest link runs at ``link_gbps`` (the
    others keep their ratios to it), or UNIT_BPS without a link speed."""
    if link_gbps is None:
        return UNIT_BPS
    return link_gbps * 1e9 / max(link.capacity for link in topology.links.values())


def run(point: dict[str, Any], settings: dict[str, Any], out: str) -> dict[str, Any]:
    """Solve the point's scheme; ``settings`` may set k_paths, trials and rounding."""
    topo = build_topology(point["topology"], seed=point["seed"])
    plan = solve(topo, point["scheme"], seed=point["seed"],
                 k_paths=int(settings.get("k_paths", 3)), trials=int(settings.get("trials", 32)),
                 rounding=str(settings.get("rounding", "best")))
    unit = unit_bps(topo, point["link_gbps"])
    rate_bps = plan.rate * unit
    row: dict[str, Any] = {
        "workers": len(topo.workers), "pss": len(topo.pss),
        "rate_units": round(plan.rate, 6),
        "upper_bound_units": None if plan.upper_bound is None else round(plan.upper_bound, 6),
        "rate_per_worker_bps": rate_bps,
        "solve_s": plan.meta.get("solve_seconds"),
    }
    if point["model"] is not None:
        bits = model_bytes(point["model"]) * 8
        row["comm_time_s"] = bits / rate_bps if rate_bps > 0 else None
    return row
