"""The sweep's ``emulate`` kind: one scheme's plan on a Mininet network of embedded P4
switches, measured as `inart emulate` measures it.  The sweep gives every point the node's
one ``emulation`` resource, so a machine runs one emulation at a time; the network lock
(/tmp/inart-net.lock, what scripts and tests on a shared machine take with flock) keeps it
off emulations started outside the sweep, whose switch and interface names it would share.
The ``cluster`` setting spreads every point's network over the servers of a servers file, as
`inart emulate --cluster` does (emulation/cluster)."""

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
from emulation.cluster.spec import ClusterSpecError
from emulation.cluster.spec import load as load_servers
from emulation.runs.emulate import Emulation
from host_stack.train.hostrun import TrafficConfig

NET_LOCK = Path("/tmp/inart-net.lock")
DEFAULTS = {"scale": 0.25, "rounds": 3, "values": 32 * 1500, "deadline_s": 600.0,
            "lock_wait_s": 3600.0}


def holder_pids(path: Path) -> list[int]:
    """The processes /proc/locks lists as holding a lock on ``path`` (waiters left out)."""
    try:
        inode = f":{os.stat(path).st_ino}"
    except FileNotFoundError:
        return []
    pids = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" not in fields and len(fields) > 5 and fields[5].endswith(inode):
            pids.append(int(fields[4]))
    return pids


def parent_of(pid: int) -> int:
    """``pid``'s parent (0 once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rpartition(")")[2].split()[1])  # the name in parentheses may hold spaces


def held_above(path: Path) -> bool:
    """Whether this process or one it descends from holds the lock: a sweep run as `flock
    /tmp/inart-net.lock inart sweep ...` (its local Ray head and workers are its descendants),
    under which its points run rather than wait for their own sweep."""
    holders = set(holder_pids(path))
    pid = os.getpid()
    while pid > 1:
        if pid in holders:
            return True
        pid = parent_of(pid)
    return False


def lock_holders(path: Path) -> str:
    """Who holds a flock on ``path``: "pid N (command line)" from /proc/locks, so a point that
    waited too long names what it waited for."""
    out = []
    for pid in holder_pids(path):
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
    would); a timer interrupts it, hence the main thread only (where Ray runs a task).
    Held already by this process or an ancestor (held_above), it is not taken again."""
    if held_above(path):
        yield
        return
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


def check_settings(settings: dict[str, Any], topologies: list[str]) -> dict[str, Any]:
    """The settings as the points get them, checked when the sweep starts (a bad servers file
    fails in a second, not on each point): ``cluster`` made an absolute path (the points run in
    Ray workers, whose directory is not the sweep's; on a Ray cluster the file must be at that
    path on every node that runs emulations), its file a valid servers file whose placement
    names nodes of every topology.  ValueError naming the setting otherwise."""
    if "cluster" not in settings:
        return settings
    value = settings["cluster"]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"cluster: {value!r}: expected the path of a servers file (what "
                         f"`inart emulate --cluster` reads)")
    path = Path(value).expanduser().absolute()
    try:
        spec = load_servers(path)
        for name in topologies:
            try:
                topo = build_topology(name)
            except ValueError:
                continue  # its points fail with the topology's own error
            spec.check_topology(topo)
    except ClusterSpecError as exc:
        raise ValueError(f"cluster: {exc}") from None
    return {**settings, "cluster": str(path)}


def run(point: dict[str, Any], settings: dict[str, Any], out: str) -> dict[str, Any]:
    """Emulate the point; settings: scale (Mbit/s per unit), rounds, values (the synthetic
    gradient's int32 values: an emulation runs at Mbit/s, no real model's size), deadline_s,
    lock_wait_s (how long to wait for the network lock), cluster (a servers file: the row
    then says where each node ran and which tunnel each link between servers got).
    Wrong aggregates fail the point (its numbers would mean nothing)."""
    s = {**DEFAULTS, **settings}
    seed = point["seed"]
    topo = build_topology(point["topology"])  # PS placement fixed; the seed drives the solver
    plan = plan_for(topo, point["scheme"], seed)
    cluster = load_servers(s["cluster"]) if s.get("cluster") else None
    with net_lock(float(s["lock_wait_s"])), \
            Emulation(topo, Path(out), "embedded", float(s["scale"]), quiet=True,
                      cluster=cluster) as emu:
        cfg = TrafficConfig(mode="synthetic", rounds=int(s["rounds"]), values=int(s["values"]),
                            unit_bps=emu.unit_bps, seed=seed,
                            deadline_s=float(s["deadline_s"]))
        result = emu.run(plan, emu.install(plan), cfg, plan.scheme)
        placed = emu.net.cluster.summary() if emu.net.cluster is not None else {}
    row = {**result.row, **placed}
    if row.get("exact") is False:
        raise RuntimeError(f"{plan.scheme}: wrong aggregates at the PSs")
    row.pop("scheme")  # the point's own
    row["run_wall_s"] = row.pop("wall_s", None)
    return {**row, "rate_units": plan.rate, "rate_per_worker_bps": row["rate_mbps"] * 1e6,
            "comm_time_s": row["comm_s"], "plan_comm_time_s": row["plan_comm_s"]}
