"""What an emulation costs the machine: memory (PSS) and CPU of its switches and its hosts.

PSS, not RSS: switches forked from one parent (emulation/targets/embedded/farm.py) share their
code pages, and RSS would count those pages once per switch; PSS divides each shared page
among the processes that map it, so the sum over all processes is what they use together.
The RSS sum is kept beside it (its own peak): the ratio of the two tells how much is shared.
A background thread samples /proc every ``interval`` seconds: the peak of the total PSS (with
its split at that moment), the CPU seconds each process was last seen to have used, and the
machine's busy fraction, from which a scale sweep tells whether the CPU was saturated and by
whom; per sample also the machine's busy fraction and run queue, and per process the time its
threads ran and waited for a CPU (/proc/PID/task/TID/schedstat), from which a run's fidelity
verdict (emulation/measure/fidelity.py) tells whether the machine, not the scheme, set its pace.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def memory_kb(pid: int) -> tuple[int, int]:
    """The process's (proportional, resident) set size in KiB ((0, 0) once it has exited)."""
    pss = rss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                elif line.startswith("Rss:"):
                    rss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return pss, rss


def pss_kb(pid: int) -> int:
    """The process's proportional set size in KiB (0 once it has exited)."""
    return memory_kb(pid)[0]


def cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of the process (None once it has exited)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


SCHEDSTAT = Path("/proc/self/schedstat").exists()  # the kernel keeps per-task run delays


def sched_s(pid: int) -> tuple[float, float, int] | None:
    """(ran, waited for a CPU) seconds and times scheduled in, of all the process's threads,
    from their schedstat (None once it has exited, or where the kernel keeps no schedstat).
    Per thread: a process's own schedstat counts its main thread only."""
    ran = waited = 0.0
    slices = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue  # a thread that ended meanwhile
        ran += int(fields[0]) / 1e9
        waited += int(fields[1]) / 1e9
        slices += int(fields[2])
    return (ran, waited, slices) if tasks else None


def descendants(roots: list[int]) -> list[int]:
    """``roots`` and every process below them (a host's command may fork), each once (a
    root may be below another: forked switches below their farm)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += children.get(pid, [])
    return sorted(out)


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    return parse_stat(Path("/proc/stat").read_text())[:2]


def parse_stat(text: str) -> tuple[float, float, int]:
    """(busy, total) jiffies of all CPUs since boot and the runnable tasks now
    (``procs_running``, the run queue over every CPU), from the text of /proc/stat."""
    lines = text.splitlines()
    values = [int(v) for v in lines[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    running = next((int(line.split()[1]) for line in lines
                    if line.startswith("procs_running ")), 0)
    return float(sum(values) - idle), float(sum(values)), running


@dataclass
class Usage:
    """Resources over one interval of a monitor (``Monitor.mark`` to ``Monitor.usage``)."""

    wall_s: float
    peak_pss_mb: float  # peak of the total PSS of every group in the interval
    peak_split_mb: dict[str, float]  # each group's PSS at that peak
    cores: dict[str, float]  # CPU seconds per wall second, per group
    machine_busy: float  # fraction of all CPUs busy (anything on the machine)
    peak_rss_mb: float = 0.0  # peak of the total RSS (shared pages counted once per process)
    cpus: int = field(default_factory=lambda: os.cpu_count() or 1)
    # per sample (every ``interval`` s): the share of samples the machine was >= SATURATED
    # busy, and runnable tasks per CPU (mean; > 1: tasks waited for a CPU)
    saturated_share: float = 0.0
    run_queue: float = 0.0
    samples: int = 0
    # the groups' processes, from schedstat: seconds their threads ran and waited for a CPU
    # (None: the kernel keeps no schedstat)
    ran_s: float | None = None
    waited_s: float | None = None
    slices: int = 0  # times their threads were scheduled in

    @property
    def wake_wait_ms(self) -> float | None:
        """The processes' mean wait for a CPU each time they were scheduled in, in ms (None:
        unknown, or they never ran)."""
        if self.waited_s is None or self.slices <= 0:
            return None
        return self.waited_s / self.slices * 1e3


SATURATED = 0.95  # busy fraction of all CPUs over a sample at which the machine is saturated


class Monitor:
    """Samples groups of processes (name -> root pids, asked anew each time) in a thread."""

    def __init__(self, groups: Callable[[], dict[str, list[int]]], interval: float = 1.0,
                 stat: Callable[[], str] = lambda: Path("/proc/stat").read_text()) -> None:
        self.groups = groups
        self.interval = interval
        self.stat = stat  # the text of /proc/stat
        self.lock = threading.Lock()
        self.cpu: dict[str, dict[int, float]] = {}  # group -> pid -> last CPU seconds seen
        # group -> pid -> last (ran, waited) seconds and slices seen, from schedstat
        self.sched: dict[str, dict[int, tuple[float, float, int]]] = {}
        self.peak_mb, self.peak_split = 0.0, {}
        self.all_peak_mb, self.all_peak_split = 0.0, {}
        self.peak_rss_mb = self.all_peak_rss_mb = 0.0
        self._cpu_last: tuple[float, float] | None = None
        self._cpu_samples: list[tuple[float, int]] = []  # (busy fraction, runnable tasks)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="resource-monitor", daemon=True)
        self._mark = self._snapshot()

    def __enter__(self) -> Monitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def _sample_cpu(self) -> None:
        """The machine's busy fraction since the last sample (>= a quarter interval ago) and
        its run queue now."""
        busy, total, running = parse_stat(self.stat())
        with self.lock:
            last = self._cpu_last
            span = max(1.0, self.interval / 4 * TICK * (os.cpu_count() or 1))
            if last is None or total - last[1] >= span:
                if last is not None:
                    self._cpu_samples.append(((busy - last[0]) / (total - last[1]), running))
                self._cpu_last = (busy, total)

    def sample(self) -> None:
        """Read every group's PSS and CPU once, and the machine's; keep the peaks."""
        self._sample_cpu()
        split: dict[str, float] = {}
        rss = 0.0
        for name, roots in self.groups().items():
            pids = descendants(roots)
            mem = [memory_kb(p) for p in pids]
            split[name] = sum(m[0] for m in mem) / 1024
            rss += sum(m[1] for m in mem) / 1024
            with self.lock:
                seen = self.cpu.setdefault(name, {})
                sched = self.sched.setdefault(name, {})
                for pid in pids:
                    used = cpu_s(pid)
                    if used is not None:
                        seen[pid] = used
                    times = sched_s(pid) if SCHEDSTAT else None
                    if times is not None:
                        sched[pid] = times
        total = sum(split.values())
        with self.lock:
            if total > self.peak_mb:
                self.peak_mb, self.peak_split = total, split
            if total > self.all_peak_mb:
                self.all_peak_mb, self.all_peak_split = total, split
            self.peak_rss_mb = max(self.peak_rss_mb, rss)
            self.all_peak_rss_mb = max(self.all_peak_rss_mb, rss)

    def _snapshot(self) -> tuple[float, dict[str, float], tuple[float, float],
                                 tuple[float, float, int]]:
        with self.lock:
            cpu = {name: sum(seen.values()) for name, seen in self.cpu.items()}
            times = [t for seen in self.sched.values() for t in seen.values()]
        sched = (sum(t[0] for t in times), sum(t[1] for t in times), sum(t[2] for t in times))
        return time.monotonic(), cpu, machine_busy(), sched

    def mark(self) -> None:
        """Start a new interval: its peak and CPU count from now."""
        self.sample()
        with self.lock:
            self.peak_mb, self.peak_split, self.peak_rss_mb = 0.0, {}, 0.0
            self._cpu_samples = []
        self._mark = self._snapshot()

    def usage(self) -> Usage:
        """What the processes used since the last ``mark``."""
        self.sample()
        t0, cpu0, (busy0, all0), (ran0, waited0, slices0) = self._mark
        t1, cpu1, (busy1, all1), (ran1, waited1, slices1) = self._snapshot()
        wall = max(t1 - t0, 1e-9)
        cpus = os.cpu_count() or 1
        with self.lock:
            got = list(self._cpu_samples)
            return Usage(wall_s=wall, peak_pss_mb=self.peak_mb, peak_split_mb=dict(self.peak_split),
                         cores={k: (v - cpu0.get(k, 0.0)) / wall for k, v in cpu1.items()},
                         machine_busy=(busy1 - busy0) / max(all1 - all0, 1.0), cpus=cpus,
                         saturated_share=(sum(b >= SATURATED for b, _ in got) / len(got)
                                          if got else 0.0),
                         run_queue=sum(r for _, r in got) / len(got) / cpus if got else 0.0,
                         samples=len(got), peak_rss_mb=self.peak_rss_mb,
                         ran_s=ran1 - ran0 if SCHEDSTAT else None,
                         waited_s=waited1 - waited0 if SCHEDSTAT else None,
                         slices=slices1 - slices0)
