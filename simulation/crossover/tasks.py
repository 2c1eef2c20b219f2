"""The map's simulations: each cell needs every INA scheme and every collective, and many
cells share runs (a collective does not see the switch preset, an INA scheme does not see the
hosts' per-message cost), so cells are turned into distinct tasks and each runs once.

``run_task`` is what a Ray worker runs; it builds the cluster exactly as ``inart simulate``
does from the same options, so a cell can be checked against a single run."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from simulation.crossover.grid import Cell
from simulation.hardware import HOSTS, SWITCHES

INA = ("inart", "atp")
COLLECTIVES = ("ring", "tree", "rsgcm")


@dataclass(frozen=True)
class Task:
    """One simulation: a scheme on fattree:k with ``ps`` PSs (``switch`` for INA schemes,
    ``host_us`` for collectives, ``sender_pps`` for INA senders that cannot keep pace)."""

    k: int
    link_gbps: float
    ps: int
    model: str
    scheme: str
    seed: int
    switch: str | None = None
    host_us: float | None = None
    sender_pps: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def cost(self) -> float:
        """Rough relative wall time (hosts, and the trees' rank-by-rank runs), to start the
        longest first."""
        weight = {"tree": 40.0, "rsgcm": 8.0, "ring": 2.0}.get(self.scheme, 1.0)
        return weight * self.k ** 3


def host_figures(host: str) -> tuple[float, float | None]:
    """(us per collective message, INA sender packets/s or None) of a host axis value."""
    if host in HOSTS:
        preset = HOSTS[host]
        return preset.message_us.value, preset.ina_pps.value if preset.ina_pps else None
    return float(host), None


def tasks_of(cell: Cell) -> dict[str, Task]:
    """Scheme -> the task that gives its time on ``cell``."""
    host_us, pps = host_figures(cell.host)
    base = dict(k=cell.k, link_gbps=cell.link_gbps, ps=cell.ps_count, model=cell.model,
                seed=cell.seed)
    out = {s: Task(scheme=s, switch=cell.switch, sender_pps=pps, **base) for s in INA}
    out.update({s: Task(scheme=s, host_us=host_us, **base) for s in COLLECTIVES})
    return out


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """Simulate one task: communication time, wall time and the simulator's note."""
    from control_plane.model.topologies import build_topology, command_seed
    from simulation.hardware import with_switches
    from simulation.profiles import BUILTIN
    from simulation.run import simulate, unit_bps

    t = Task(**task)
    topo = build_topology(f"fattree:{t.k}", ps=t.ps, seed=command_seed(t.seed))
    if t.switch is not None:
        topo = with_switches(topo, SWITCHES[t.switch], unit_bps(topo, t.link_gbps, None))
    res = simulate(topo, t.scheme, model_bytes=BUILTIN[t.model].model_bytes,
                   link_gbps=t.link_gbps, seed=t.seed, host_overhead_us=t.host_us,
                   sender_pps=t.sender_pps)
    return {"comm_time_s": res.comm_time_s, "workers": res.workers, "sim_wall_s": res.wall_s,
            "note": res.note}
