"""The sweep's ``emulate`` kind: one scheme's plan on a Mininet network of embedded P4
switches, measured as `inart emulate` measures it.  The sweep gives every point the node's
one ``emulation`` resource, so a machine runs one emulation at a time; the network lock
(/tmp/inart-net.lock, what scripts and tests on a shared machine take with flock) keeps it
off emulations started outside the sweep, whose switch and interface names it would share."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from control_plane.model.topologies import build_topology
from control_plane.solver.solve import plan_for
from emulation.emulate import Emulation
from host_stack.train.hostrun import TrafficConfig

NET_LOCK = Path("/tmp/inart-net.lock")
DEFAULTS = {"scale": 0.25, "rounds": 3, "values": 32 * 1500, "deadline_s": 600.0,
            "lock_wait_s": 3600.0}


def lock_holders(path: Path) -> str:
    """Who holds a flock on ``path``: "pid N (command line)" from /proc/locks, so a point that
    waited too long names what it waited for."""
    inode = f":{os.stat(path).st_ino}"
    pids = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" not in fields and len(fields) > 5 and fields[5].endswith(inode):
            pids.append(fields[4])
    out = []
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            cmd = "?"
        out.append(f"pid {pid} ({cmd.strip()[:160]})")
    return ", ".join(out) or "no holder listed in /proc/locks"


class _LockWait(Exception):
    """SIGALRM while waiting for the lock."""


def _give_up(signum: int, frame: object) -> None:
    raise _LockWait


@contextlib.contextmanager
def net_lock(timeout_s: float, path: Path = NET_LOCK) -> Iterator[None]:
    """Hold the machine's network lock (flock semantics: released when the process dies),
    waiting at most ``timeout_s`` for it.  The wait is flock's own blocking one, so the point
    queues with `flock` commands instead of losing every release to them (a polling waiter
    would); a timer interrupts it, hence the main thread only (where Ray runs a task)."""
    with path.open("a") as f:
        old = signal.signal(signal.SIGALRM, _give_up)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            fcntl.flock(f, fcntl.LOCK_EX)
        except _LockWait:
            raise TimeoutError(f"network lock {path}: still held after {timeout_s:g} s by "
                               f"{lock_holders(path)}") from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run(point: dict[str, Any], settings: dict[str, Any], out: str) -> dict[str, Any]:
    """Emulate the point; settings: scale (Mbit/s per unit), rounds, values (the synthetic
    gradient's int32 values: an emulation runs at Mbit/s, no real model's size), deadline_s,
    lock_wait_s (how long to wait for the network lock).
    Wrong aggregates fail the point (its numbers would mean nothing)."""
    s = {**DEFAULTS, **settings}
    seed = point["seed"]
    topo = build_topology(point["topology"])  # PS placement fixed; the seed drives the solver
    plan = plan_for(topo, point["scheme"], seed)
    with net_lock(float(s["lock_wait_s"])), \
            Emulation(topo, Path(out), "embedded", float(s["scale"]), quiet=True) as emu:
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
