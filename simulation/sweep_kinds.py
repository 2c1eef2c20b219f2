"""The sweep's ``plan`` and ``simulate`` kinds, in the simulation's units and models so the
two compare point by point: a plan's promise (its rate, and its communication time in the
frames the INA protocol sends) and the simulated iteration of the same scheme, topology, link
speed and model.  Link speeds and models mean what they mean to `inart simulate`: the
fastest link at ``link_gbps`` (the others in proportion), else 1 Gbit/s per unit; models
are simulation.profiles' (real parameter sizes, synthetic:BYTES or a profile file).  Every
kind builds the topology from its spec alone (PS placement fixed); the seed drives the
solver and the schedules."""

from __future__ import annotations

from typing import Any

from control_plane.model.topologies import build_topology
from control_plane.solver.solve import solve
from simulation.ina import plan_comm_time
from simulation.profiles import load_profile
from simulation.run import simulate as simulate_scheme
from simulation.run import unit_bps

DEFAULT_MODEL = "resnet50"  # `inart simulate`'s default model


def check_model(spec: str) -> int:
    """A model name's gradient bytes (ProfileError, a ValueError, for a bad name)."""
    return load_profile(spec).model_bytes


def plan(point: dict[str, Any], settings: dict[str, Any], out: str) -> dict[str, Any]:
    """Solve the point's scheme (the seed drives the solver's rounding); settings: k_paths,
    trials, rounding."""
    topo = build_topology(point["topology"])
    p = solve(topo, point["scheme"], seed=point["seed"], k_paths=int(settings.get("k_paths", 3)),
              trials=int(settings.get("trials", 32)),
              rounding=str(settings.get("rounding", "best")))
    unit = unit_bps(topo, point["link_gbps"], None)
    row: dict[str, Any] = {
        "workers": len(topo.workers), "pss": len(topo.pss), "unit_bps": unit,
        "rate_units": p.rate,
        "upper_bound_units": p.upper_bound,
        "rate_per_worker_bps": p.rate * unit,
        "solve_s": p.meta.get("solve_seconds"),
    }
    if point["model"] is not None and p.rate > 0:
        model_bytes = check_model(point["model"])
        row.update(model_bytes=model_bytes, comm_time_s=plan_comm_time(p, model_bytes, unit))
    return row


def simulate(point: dict[str, Any], settings: dict[str, Any], out: str) -> dict[str, Any]:
    """Simulate the point (INA schemes: the plan solved with the seed, RSGCM's schedule drawn
    with it); settings: iterations, latency_us, compute_s (else the model profile's), pace,
    host_overhead_us (else the measured default)."""
    topo = build_topology(point["topology"])
    profile = load_profile(point["model"] or DEFAULT_MODEL, settings.get("compute_s"))
    result = simulate_scheme(
        topo, point["scheme"], model_bytes=profile.model_bytes,
        compute_s=profile.compute_s, link_gbps=point["link_gbps"],
        latency_us=settings.get("latency_us"), iterations=int(settings.get("iterations", 1)),
        seed=point["seed"], pace=float(settings.get("pace", 1.0)),
        host_overhead_us=settings.get("host_overhead_us")).to_dict()
    for name in ("scheme", "topology", "stages"):  # the point's own, and per-stage detail
        result.pop(name)
    result["fastest_link_gbps"] = result.pop("link_gbps")
    result["sim_wall_s"] = result.pop("wall_s")
    return result
