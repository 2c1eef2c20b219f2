"""The sweep's ``emulate`` kind: one scheme's plan on a Mininet network of embedded P4
switches, measured as `inart emulate` measures it.  The sweep gives every point the node's
one ``emulation`` resource, so a machine runs one emulation at a time; the network lock
(/tmp/inart-net.lock, what scripts and tests on a shared machine take with flock) keeps it
off emulations started outside the sweep, whose switch and interface names it would share."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from control_plane.model.topologies import build_topology
from control_plane.solver.solve import plan_for
from emulation.emulate import Emulation
from host_stack.train.hostrun import TrafficConfig

NET_LOCK = Path("/tmp/inart-net.lock")
DEFAULTS = {"scale": 0.25, "rounds": 3, "values": 32 * 1500, "deadline_s": 600.0}


@contextlib.contextmanager
def net_lock(path: Path = NET_LOCK) -> Iterator[None]:
    """Hold the machine's network lock (flock semantics: released when the process dies)."""
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run(point: dict[str, Any], settings: dict[str, Any], out: str) -> dict[str, Any]:
    """Emulate the point; settings: scale (Mbit/s per unit), rounds, values (the synthetic
    gradient's int32 values: an emulation runs at Mbit/s, no real model's size), deadline_s.
    Wrong aggregates fail the point (its numbers would mean nothing)."""
    s = {**DEFAULTS, **settings}
    seed = point["seed"]
    topo = build_topology(point["topology"])  # PS placement fixed; the seed drives the solver
    plan = plan_for(topo, point["scheme"], seed)
    with net_lock(), Emulation(topo, Path(out), "embedded", float(s["scale"]),
                               quiet=True) as emu:
        cfg = TrafficConfig(mode="synthetic", rounds=int(s["rounds"]), values=int(s["values"]),
                            unit_bps=emu.unit_bps, seed=seed,
                            deadline_s=float(s["deadline_s"]))
        result = emu.run(plan, emu.install(plan), cfg, plan.scheme)
    row = dict(result.row)
    if row.get("exact") is False:
        raise RuntimeError(f"{plan.scheme}: wrong aggregates at the PSs")
    row.pop("scheme")  # the point's own
    row["run_wall_s"] = row.pop("wall_s", None)
    return {**row, "rate_units": plan.rate, "rate_per_worker_bps": row["rate_mbps"] * 1e6,
            "comm_time_s": row["comm_s"], "plan_comm_time_s": row["plan_comm_s"]}
