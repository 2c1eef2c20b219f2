"""Run a job's PS and worker processes on its hosts, round by round: emulated hosts (Mininet),
network namespaces or real machines (`inart run --inventory`, realhosts/).

The processes are the same entry points a real host runs (``python -m host_stack.ina.ps`` /
``python -m host_stack.train.worker``) with the deployed addresses; the PSs send each RESULT once
to the job's result address (``--result-to``) and the switches replicate it.  Two modes:
``synthetic`` (PSs in sum mode, seeded random gradients: every round's sums are recomputed here
with numpy and compared on every worker) and ``train`` (a real model on the digits data).

The hosts are anything with ``popen(host, cmd, env=..., **Popen options)`` (``Hosts``); the
files the processes read and write (plan, address map, start barrier, PS counters) keep their
absolute paths on every host, and ``HostFiles`` moves them where the hosts do not share this
machine's filesystem.  Every wait has a deadline; a process that fails stops the job with its
stderr tail (stopping the processes is the hosts' owner's job, in its ``finally``).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from control_plane.cli.args import progress as progress_bar
from control_plane.deploy.addressing import Addressing
from control_plane.deploy.entries import Compiled
from control_plane.model.plan import Plan
from host_stack.ina import wire
from host_stack.ina.pacing import FRAME_OVERHEAD
from host_stack.ina.transport import PACING_MODES
from host_stack.train.launcher import JsonLineReader
from host_stack.train.worker import expected_digests

MODES = ("synthetic", "train")


class TrafficError(RuntimeError):
    """A host process failed or a deadline passed; the message names it."""


class Hosts(Protocol):
    """Starts a job's processes on its hosts (``cmd[0]`` is this machine's interpreter; a
    launcher for other machines runs its host's own)."""

    def popen(self, host: str, cmd: list[str], env: dict[str, str] | None = None,
              **kwargs) -> subprocess.Popen: ...


class HostFiles:
    """The job's files where the hosts see this machine's filesystem (Mininet hosts, network
    namespaces, loopback): nothing to copy.  A launcher for other machines overrides these."""

    def share(self, hosts: list[str], paths: list[Path]) -> None:
        """Make ``paths`` (written here) readable at the same paths on ``hosts``."""

    def touch(self, hosts: list[str], path: Path) -> None:
        """Create ``path`` on ``hosts`` (the workers' start barrier)."""
        path.touch()

    def fetch(self, host: str, path: Path) -> None:
        """Copy ``path`` written on ``host`` to the same path here (missing: left missing)."""


SHARED = HostFiles()


@dataclass(frozen=True)
class TrafficConfig:
    """What the hosts run; ``unit_bps`` = bit/s of one topology rate unit (pacing)."""

    mode: str = "synthetic"
    rounds: int = 3
    values: int = 32 * 600
    model: str = "mlp"
    unit_bps: float | None = None
    rate_factor: float = 1.0
    pacing: str = "user"  # INA senders: "user" (token bucket) or "kernel" (host's egress)
    n: int = wire.DEFAULT_N
    window: int = 32
    seed: int = 0
    batch: int = 32
    deadline_s: float = 300.0
    # each PS and worker serves /metrics on the Unix socket DIR/NAME.sock (None: none)
    metrics_dir: str | None = None

    def metrics_args(self, name: str) -> list[str]:
        return [] if self.metrics_dir is None else \
            ["--metrics", f"unix:{Path(self.metrics_dir) / name}.sock"]

    def check(self) -> None:
        if self.mode not in MODES:
            raise TrafficError(f"mode '{self.mode}': expected one of {MODES}")
        if self.rounds < 1 or self.values < 1 or self.window < 1:
            raise TrafficError("rounds, values and window: expected >= 1")
        if not self.rate_factor > 0:
            raise TrafficError(f"rate factor {self.rate_factor}: expected > 0")
        if self.pacing not in PACING_MODES:
            raise TrafficError(f"pacing '{self.pacing}': expected one of {PACING_MODES}")

    @property
    def frame_bytes(self) -> int:
        return wire.packet_len(self.n) + FRAME_OVERHEAD


@dataclass
class JobResult:
    """Per-worker round records, the workers' final records and the PSs' counters."""

    rounds: dict[str, list[dict]]
    done: dict[str, dict]
    ps_stats: dict[str, dict]
    chunks: dict[str, int]  # PS -> chunks of its shard
    wall_s: float
    exact: bool | None = None  # synthetic: every round's sums equal numpy's on every worker
    mismatches: list[str] = field(default_factory=list)


def host_address_map(addr: Addressing, pss: list[str], workers: list[str]) -> dict[str, str]:
    """The host stack's address map (node -> 'ip:port' at DESIGN's UDP ports)."""
    out = {s: f"{addr.ip[s]}:{wire.GRAD_PORT}" for s in pss}
    out.update({w: f"{addr.ip[w]}:{wire.RESULT_PORT}" for w in workers})
    return out


def host_plan(plan: Plan, compiled: Compiled) -> dict:
    """The plan file the hosts run on: the plan plus the switches' worker ranks.

    The rate stays the plan's own (the hosts refuse a plan claiming more than its loads
    allow); a sweep paces at f x factor by scaling ``--unit-bps`` instead.
    """
    doc = plan.to_dict()
    doc["ranks"] = dict(compiled.ranks)
    return doc


def _tail(path: Path) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").strip().splitlines()[-6:])
    except OSError:
        return ""


@dataclass(frozen=True)
class JobSource:
    """Where a job's hosts get their plan: files written for them, or a controller service
    whose plan versions they follow (``--service``)."""

    argv: list[str]  # options every process of the job gets
    ps_argv: list[str]  # and the PSs alone
    workers: list[str]
    pss: list[str]
    ranks: dict[str, int]  # worker -> bitmap rank (the synthetic sums' order)
    label: str  # progress bar
    worker_argv: tuple[str, ...] = ()  # and the workers alone (e.g. --sync ring)
    worker_env: dict[str, dict[str, str]] = field(default_factory=dict)  # host -> variables
    files: tuple[Path, ...] = ()  # what the processes read (plan, address map)


def plan_files(addr: Addressing, plan: Plan, compiled: Compiled, workdir: Path) -> JobSource:
    """The plan and address map as files in ``workdir``; RESULTs to the plan's address."""
    topo = plan.topology
    plan_path, addr_path = workdir / "plan.json", workdir / "addresses.json"
    plan_path.write_text(json.dumps(host_plan(plan, compiled), indent=1))
    addr_path.write_text(json.dumps(host_address_map(addr, topo.pss, topo.workers)))
    return JobSource(["--plan", str(plan_path), "--addresses", str(addr_path),
                      "--pool-size", str(compiled.pool_size)],
                     ["--result-to", f"{compiled.result_addr}:{wire.RESULT_PORT}"],
                     topo.workers, topo.pss, dict(compiled.ranks), plan.scheme,
                     files=(plan_path, addr_path))


def service_job(address: str, job_id: int, workers: list[str], pss: list[str],
                ranks: dict[str, int]) -> JobSource:
    """A job of `inart serve` at ``address`` (reachable from the hosts: unix:PATH)."""
    return JobSource(["--service", address, "--job-id", str(job_id)], [], workers, pss,
                     dict(ranks), f"job {job_id}")


def run_job(net: Hosts, addr: Addressing, plan: Plan, compiled: Compiled, cfg: TrafficConfig,
            workdir: Path, quiet: bool = False) -> JobResult:
    """One job over the installed network; returns when every worker finished."""
    workdir.mkdir(parents=True, exist_ok=True)
    return run_hosts(net, plan_files(addr, plan, compiled, workdir), cfg, workdir, quiet)


def transport_argv(cfg: TrafficConfig) -> list[str]:
    """The INA transport's options of ``cfg`` for the job's processes: values per packet,
    window (what the network's queues were sized for) and pacing at the plan's rate."""
    out = ["--n", str(cfg.n), "--window", str(cfg.window)]
    if cfg.unit_bps is not None:
        out += ["--unit-bps", repr(cfg.unit_bps * cfg.rate_factor), "--pacing", cfg.pacing]
    return out


class JobProcesses:
    """A job's processes on its hosts, their stdout followed as JSON lines: the next line
    any of them printed, or a TrafficError naming the first that failed (its stderr's
    tail) or the deadline that passed."""

    def __init__(self, net: Hosts, workdir: Path, deadline_s: float) -> None:
        self.net, self.workdir, self.deadline_s = net, workdir, deadline_s
        self.deadline = time.monotonic() + deadline_s
        self.events: queue.Queue = queue.Queue()
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> None:
        err = open(self.workdir / f"{name}.stderr", "w")  # noqa: SIM115 (owned by the child)
        try:
            self.procs[name] = self.net.popen(name, cmd, env=env, stdout=subprocess.PIPE,
                                              stderr=err, text=True)
        finally:
            err.close()
        JsonLineReader(name, self.procs[name], self.events).start()

    def next_event(self) -> tuple[str, dict]:
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                running = [n for n, p in self.procs.items() if p.poll() is None]
                raise TrafficError(f"deadline of {self.deadline_s:.0f} s passed; still "
                                   f"running: {', '.join(running)} (logs in {self.workdir})")
            try:
                name, rec = self.events.get(timeout=min(left, 1.0))
            except queue.Empty:
                failed = [n for n, p in self.procs.items() if p.poll() not in (None, 0)]
                if failed:
                    raise self.failed(failed[0]) from None
                continue
            if rec["event"] == "eof" and self.procs[name].wait(timeout=10) != 0:
                raise self.failed(name)
            return name, rec

    def failed(self, name: str) -> TrafficError:
        return TrafficError(f"{name} exited with status {self.procs[name].returncode}:\n"
                            f"{_tail(self.workdir / f'{name}.stderr')}")


def run_hosts(net: Hosts, source: JobSource, cfg: TrafficConfig, workdir: Path,
              quiet: bool = False, on_round: Callable[[int], None] | None = None,
              files: HostFiles = SHARED) -> JobResult:
    """Start the job's PSs and workers in their hosts and wait until every worker finished;
    ``on_round(r)`` runs once every worker reported round r (e.g. to inject an event)."""
    cfg.check()
    workdir.mkdir(parents=True, exist_ok=True)
    job = [*source.argv, *transport_argv(cfg), "--seed", str(cfg.seed)]
    if cfg.mode == "synthetic":
        job += ["--model", "synthetic", "--values", str(cfg.values)]
    else:
        job += ["--model", cfg.model]
    py = [sys.executable, "-m"]
    t0 = time.monotonic()
    job_procs = JobProcesses(net, workdir, cfg.deadline_s)
    procs = job_procs.procs

    def start(name: str, cmd: list[str]) -> None:
        job_procs.start(name, cmd, source.worker_env.get(name))

    next_event = job_procs.next_event

    mode = "sum" if cfg.mode == "synthetic" else "train"
    files.share(source.pss + source.workers, list(source.files))
    for ps in source.pss:
        start(ps, [*py, "host_stack.ina.ps", *job, "--ps", ps, "--mode", mode, *source.ps_argv,
                   *cfg.metrics_args(ps),
                   "--stats", str(workdir / f"{ps}.stats.json"),
                   "--idle-exit", str(cfg.deadline_s)])
    ready: set[str] = set()
    chunks: dict[str, int] = {}
    while len(ready) < len(source.pss):
        name, rec = next_event()
        if rec["event"] == "ready":
            ready.add(name)
            chunks[name] = rec["chunks"]
    start_file = workdir / "start"  # the workers' start barrier: round 0 begins together
    start_file.unlink(missing_ok=True)
    for w in source.workers:
        start(w, [*py, "host_stack.train.worker", *job, *source.worker_argv, "--worker", w,
                  *cfg.metrics_args(w),
                  "--rounds", str(cfg.rounds),
                  "--batch", str(cfg.batch), "--start-file", str(start_file),
                  "--start-timeout", str(cfg.deadline_s)])
    waiting = set(source.workers)
    while waiting:
        name, rec = next_event()
        if rec["event"] == "ready":
            waiting.discard(name)
    files.touch(source.workers, start_file)
    rounds: dict[str, list[dict]] = {w: [] for w in source.workers}
    done: dict[str, dict] = {}
    seen: dict[int, int] = {}
    with progress_bar(total=cfg.rounds, desc=f"{source.label} rounds", unit="round",
              quiet=quiet, leave=False) as bar:
        while len(done) < len(source.workers):
            name, rec = next_event()
            if rec["event"] == "round":
                rounds[name].append(rec)
                seen[rec["round"]] = seen.get(rec["round"], 0) + 1
                if seen[rec["round"]] == len(source.workers):
                    bar.update(1)
                    if on_round is not None:
                        on_round(rec["round"])
            elif rec["event"] == "done":
                done[name] = rec
    for ps in source.pss:  # SIGTERM: the PSs write their counters and exit
        proc = procs[ps]
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    ps_stats = {}
    for ps in source.pss:
        path = workdir / f"{ps}.stats.json"
        files.fetch(ps, path)
        ps_stats[ps] = json.loads(path.read_text()) if path.exists() else {}
    result = JobResult(rounds, done, ps_stats, chunks, time.monotonic() - t0)
    if cfg.mode == "synthetic":
        order = sorted(source.ranks, key=source.ranks.get)
        want = expected_digests(len(order), cfg.rounds, cfg.values, cfg.seed,
                                [source.ranks[w] for w in order])
        for w in source.workers:
            got = [r.get("result_sha256") for r in rounds[w]]
            for r, (g, e) in enumerate(zip(got, want, strict=False)):
                if g != e:
                    result.mismatches.append(f"{w} round {r}")
            if len(got) != len(want):
                result.mismatches.append(f"{w}: {len(got)} rounds reported, {len(want)} run")
        result.exact = not result.mismatches
    return result
