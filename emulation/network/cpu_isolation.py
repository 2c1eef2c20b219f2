"""CPU isolation of an emulation's switches from its hosts with cgroups (``--switch-cpu-weight``).

On the 2-core machine the emulation runs on, 45 Python switches share the CPUs with 50 torch
workers (fattree:6); whenever the workers compute, the switches wait, the INA streams back up
in their queues and the retransmission timers fire, so a scheme sends a fraction of its plan
and the fidelity verdict (emulation/measure/fidelity.py) marks it.  Weighting the switches above the
hosts gives the data path the CPU first.  ``CpuIsolation`` puts the switch processes (the
farm and every switch it forked) in one cgroup and the hosts' processes (this process, the
fork server, and through them every PS and worker they start, which inherit it) in another,
with weights W : 100 (cgroup v2's ``cpu.weight`` scale; on a v1 ``cpu`` hierarchy
``cpu.shares`` W x 1024 / 100).  Both sit in one group per emulation whose weight is 100 per
process placed, so the emulation as a whole still competes with the machine's other processes
about as its processes did one by one (a group's weight counts as one task's otherwise).

cgroup v2 is used where its ``cpu`` controller is available; else a v1 ``cpu`` hierarchy
(hybrid mounts: v2 at /sys/fs/cgroup/unified holds no CPU controller).  Where neither is,
or the groups cannot be written (not root, a read-only mount), ``CpuIsolation`` raises
``IsolationError`` saying why, and the emulation runs without isolation and says so.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from pathlib import Path

from emulation.measure.resources import descendants

HOST_WEIGHT = 100  # the hosts' group, on cgroup v2's scale (its default weight)
MAX_WEIGHT = 10_000  # cgroup v2's cpu.weight range is 1..10000
V1_SHARES_PER_WEIGHT = 1024 / 100  # v1 cpu.shares default 1024 = v2 cpu.weight default 100
MOUNTS = Path("/proc/mounts")


class IsolationError(RuntimeError):
    """The groups could not be made or used; the message says why and what is missing."""


@dataclass(frozen=True)
class Hierarchy:
    """A mounted cgroup hierarchy with a CPU weight: its version and mount point."""

    version: int  # 2: cpu.weight; 1: cpu.shares
    root: Path

    def weight_file(self) -> str:
        return "cpu.weight" if self.version == 2 else "cpu.shares"

    def weight_value(self, weight: int) -> str:
        if self.version == 2:
            return str(max(1, min(MAX_WEIGHT, weight)))
        return str(max(2, round(weight * V1_SHARES_PER_WEIGHT)))


def find_hierarchy(mounts: str, read=lambda p: p.read_text()) -> Hierarchy:
    """The hierarchy to weight CPUs with, from /proc/mounts' text: cgroup v2 if its root
    offers the ``cpu`` controller, else a v1 ``cpu`` hierarchy; IsolationError if neither."""
    v2, v1 = None, None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        where, fstype, options = Path(fields[1]), fields[2], fields[3].split(",")
        if fstype == "cgroup2" and v2 is None:
            v2 = where
        elif fstype == "cgroup" and "cpu" in options and v1 is None:
            v1 = where
    controllers = ""
    if v2 is not None:
        try:
            controllers = read(v2 / "cgroup.controllers")
        except OSError:
            controllers = ""
        if "cpu" in controllers.split():
            return Hierarchy(2, v2)
    if v1 is not None:
        return Hierarchy(1, v1)
    have = (f"cgroup v2 at {v2} offers only '{controllers.strip() or 'nothing'}'"
            if v2 is not None else "no cgroup v2 mounted")
    raise IsolationError(f"CPU isolation needs the cgroup 'cpu' controller: {have} and no "
                         f"cgroup v1 'cpu' hierarchy is mounted (mount cgroup2 on "
                         f"/sys/fs/cgroup with the cpu controller, or run without "
                         f"--switch-cpu-weight)")


def switch_weight(text: str) -> int:
    """--switch-cpu-weight: an integer 1..10000 (the hosts' group has 100)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_WEIGHT:
        raise argparse.ArgumentTypeError(
            f"--switch-cpu-weight {text!r}: expected an integer 1..{MAX_WEIGHT} (the hosts' "
            f"group has {HOST_WEIGHT})")
    return value


class CpuIsolation:
    """Two weighted cgroups, switches and hosts, under one per emulation; ``release`` moves
    every process back to this process's own group and removes them."""

    def __init__(self, weight: int, hierarchy: Hierarchy | None = None,
                 name: str | None = None) -> None:
        self.weight = weight
        self.hier = hierarchy or find_hierarchy(MOUNTS.read_text())
        self.base = self.hier.root / (name or f"inart-{os.getpid()}")
        self.origin = self._own_group()
        self.made: list[Path] = []

    def _own_group(self) -> Path:
        """This process's group in the hierarchy (where ``release`` puts processes back)."""
        want = "0" if self.hier.version == 2 else None
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            lines = []
        for line in lines:
            num, controllers, path = (line.split(":", 2) + ["", ""])[:3]
            if (num == want) if want else "cpu" in controllers.split(","):
                return self.hier.root / path.lstrip("/")
        return self.hier.root

    def _write(self, path: Path, value: str) -> None:
        try:
            path.write_text(value)
        except OSError as exc:
            raise IsolationError(f"cgroup: cannot write {value!r} to {path} ({exc.strerror}); "
                                 f"CPU isolation needs root and a writable cgroup "
                                 f"mount") from None

    def _group(self, path: Path, weight: int) -> Path:
        try:
            path.mkdir(exist_ok=True)
        except OSError as exc:
            raise IsolationError(f"cgroup: cannot create {path} ({exc.strerror}); CPU "
                                 f"isolation needs root and a writable cgroup mount") from None
        self.made.append(path)
        self._write(path / self.hier.weight_file(), self.hier.weight_value(weight))
        return path

    def _place(self, group: Path, pids: list[int]) -> int:
        """Move each process (all its threads) into ``group``; ones that exited meanwhile are
        skipped.  Returns how many were moved."""
        moved = 0
        for pid in pids:
            try:
                (group / "cgroup.procs").write_text(str(pid))
                moved += 1
            except ProcessLookupError:  # exited meanwhile
                continue
            except OSError as exc:
                raise IsolationError(f"cgroup: cannot move process {pid} into {group} "
                                     f"({exc.strerror})") from None
        return moved

    def apply(self, switches: list[int], hosts: list[int]) -> str:
        """Place ``switches`` and ``hosts`` and everything below them; returns the note the
        rows carry.  Undoes what it made if a step fails."""
        sw, ho = descendants(switches), [p for p in descendants(hosts) if p not in switches]
        try:
            self._group(self.base, HOST_WEIGHT * max(1, len(sw) + len(ho)))
            if self.hier.version == 2:
                self._write(self.base / "cgroup.subtree_control", "+cpu")
            s = self._group(self.base / "switches", self.weight)
            h = self._group(self.base / "hosts", HOST_WEIGHT)
            self._place(s, sw)
            self._place(h, ho)
        except IsolationError:
            self.release()
            raise
        return self.note()

    def note(self) -> str:
        return (f"switches weight {self.weight} : hosts {HOST_WEIGHT} (cgroup v"
                f"{self.hier.version} {self.hier.weight_file()}, {self.base})")

    def release(self) -> None:
        """Every process left in the groups back to ``origin``; the groups removed (a group
        whose processes have not exited yet is retried for a second, then left)."""
        for group in reversed(self.made):
            for _ in range(10):
                try:
                    pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
                except OSError:
                    pids = []
                for pid in pids:
                    try:
                        (self.origin / "cgroup.procs").write_text(str(pid))
                    except OSError:
                        pass  # exited meanwhile
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
        self.made.clear()
