"""Start a whole training job on this machine: PS and worker OS processes over loopback.

Each process is the same entry point a separate host would run (``python -m host_stack.ina.ps``,
``python -m host_stack.train.worker``); the launcher only picks free loopback ports, writes the
address map, starts the processes, follows the workers' JSON lines (progress bar), collects
the results and stops everything.  Every wait has a deadline; if any process fails, all are
stopped and its error is raised.  With ``--fork-server`` the workers are forked from one
process that imported torch once (host_stack/train/forkserver.py): the same module, options,
logs and exit statuses, the torch pages shared.  Off by default here: a loopback job has a
handful of workers; the emulation, with up to 50 on one machine, forks by default.
"""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from control_plane.cli.args import progress as progress_bar
from control_plane.repo import child_env
from host_stack.collectives.launch import free_port
from host_stack.ina.addresses import loopback
from host_stack.ina.jobplan import JobPlan, load_plan, star_plan
from host_stack.train.forkserver import ForkServer, ForkServerError, forked_module
from host_stack.train.jobargs import job_argv
from host_stack.train.sync_registry import load_sync


class LaunchError(RuntimeError):
    """A process of the job failed or a deadline passed; the message says which."""


@dataclass
class TrainResult:
    """Everything a report needs."""

    plan: JobPlan
    rounds: list[dict]  # per round, aggregated over workers
    workers: list[dict]  # each worker's "done" record
    ps_stats: dict[str, dict] = field(default_factory=dict)
    wall_s: float = 0.0


def resolve_plan(spec: str, workdir: Path) -> Path:
    """A plan file path, or 'star:W:K' for W workers and K equal-share PSs on one switch."""
    if spec.startswith("star:"):
        try:
            _, w, k = spec.split(":")
            plan = star_plan(int(w), [1 / int(k)] * int(k))
        except ValueError:
            raise LaunchError(f"--plan {spec!r}: expected star:WORKERS:PSS, e.g. star:4:2") \
                from None
        path = workdir / "plan.json"
        plan.save(path)
        return path
    return Path(spec)


class JsonLineReader(threading.Thread):
    """Forward a process's stdout JSON lines to a queue as (name, record); other lines as
    {"event": "log"}, and {"event": "eof"} last.  The emulation follows its hosts with it too.
    A record is a JSON object with an "event" string; any other line (a user script's own
    JSON among them) is a log line, never a launcher's crash.
    """

    def __init__(self, name: str, proc: subprocess.Popen, out: queue.Queue) -> None:
        super().__init__(daemon=True)
        self.name_, self.proc, self.out = name, proc, out

    def run(self) -> None:
        for line in self.proc.stdout:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                rec = None
            if not (isinstance(rec, dict) and isinstance(rec.get("event"), str)):
                rec = {"event": "log", "line": line.rstrip()}
            self.out.put((self.name_, rec))
        self.out.put((self.name_, {"event": "eof"}))


def _stderr_tail(path: Path, lines: int = 5) -> str:
    try:
        return "\n".join(path.read_text().strip().splitlines()[-lines:])
    except OSError:
        return ""


class Launcher:
    """One job's processes; use as a context manager so they are always stopped."""

    def __init__(self, args, workdir: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen] = {}
        self.events: queue.Queue = queue.Queue()
        self.python = [sys.executable, "-m"]
        self.env = child_env(PYTHONUNBUFFERED="1")
        self.forks = (ForkServer(workdir / "forkserver.stderr")
                      if getattr(args, "fork_server", False) else None)

    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc) -> None:
        self.stop_all()

    def start(self, name: str, cmd: list[str],
              env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start one process of the job (stdout followed as JSON lines, stderr to its log)."""
        err = open(self.workdir / f"{name}.stderr", "w")  # noqa: SIM115 (owned by the child)
        module = forked_module(cmd)
        try:
            if self.forks is not None and module is not None:
                proc = self.forks.spawn(module, cmd[3:], dict(env or self.env), None,
                                        stdout=subprocess.PIPE, stderr=err, text=True)
            else:
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                        env=env or self.env, start_new_session=True)
        except ForkServerError as exc:
            raise LaunchError(f"{name}: {exc}") from None
        finally:
            err.close()
        self.procs[name] = proc
        JsonLineReader(name, proc, self.events).start()
        return proc

    def _fail(self, name: str, what: str) -> LaunchError:
        tail = _stderr_tail(self.workdir / f"{name}.stderr")
        return LaunchError(f"{name}: {what}" + (f"\n{tail}" if tail else ""))

    def next_event(self, deadline: float) -> tuple[str, dict]:
        """The next line any process printed; LaunchError on a deadline or a crash."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                running = [n for n, p in self.procs.items() if p.poll() is None]
                raise LaunchError(f"deadline of {self.args.deadline:.0f} s passed; still "
                                  f"running: {', '.join(running)}")
            try:
                try:
                    name, rec = self.events.get(timeout=min(left, 1.0))
                except queue.Empty:
                    failed = [n for n, p in self.procs.items() if p.poll() not in (None, 0)]
                    if failed:
                        raise self._fail(failed[0], f"exited with status "
                                         f"{self.procs[failed[0]].returncode}") from None
                    continue
                if rec["event"] == "eof":
                    rc = self.procs[name].wait(timeout=10)
                    if rc != 0:
                        raise self._fail(name, f"exited with status {rc}")
            except ForkServerError as exc:
                raise LaunchError(str(exc)) from None
            return name, rec

    def stop_all(self) -> None:
        """SIGTERM, then SIGKILL after 5 s, every process still running (and the fork
        server, whose children die with it)."""
        # ForkServerError: the server died, and its children with it
        for proc in self.procs.values():
            with contextlib.suppress(ForkServerError):
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
        end = time.monotonic() + 5
        for proc in self.procs.values():
            with contextlib.suppress(ForkServerError):
                try:
                    proc.wait(timeout=max(0.1, end - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        if self.forks is not None:
            self.forks.close()

    def run(self) -> TrainResult:
        args = self.args
        t0 = time.monotonic()
        deadline = t0 + args.deadline
        plan_path = resolve_plan(args.plan, self.workdir)
        plan = load_plan(plan_path)
        scheme = load_sync(args.sync)
        addresses = loopback(plan.ps_ids + plan.worker_ids)
        addr_file = self.workdir / "addresses.json"
        addr_file.write_text(addresses.to_json())
        shared = job_argv(args)
        shared[shared.index("--plan") + 1] = str(plan_path)
        shared += ["--addresses", str(addr_file)]
        ps_ids = plan.ps_ids if scheme.USES_PS else ()
        for ps in ps_ids:
            cmd = [*self.python, "host_stack.ina.ps", *shared, "--ps", ps,
                   "--stats", str(self.workdir / f"{ps}.stats.json"),
                   "--idle-exit", str(args.deadline)]
            if args.checkpoint_dir:
                cmd += ["--checkpoint-dir", args.checkpoint_dir]
            self.start(ps, cmd)
        ready: set[str] = set()
        while len(ready) < len(ps_ids):
            name, rec = self.next_event(min(deadline, time.monotonic() + 120))
            if rec["event"] == "ready":
                ready.add(name)
        if not scheme.USES_PS:  # collectives rendezvous on a free loopback port
            self.env["INART_DIST_INIT"] = f"tcp://127.0.0.1:{free_port()}"
        # every worker starts round 0 together (after its HELLO / group set-up): without the
        # barrier round 0 spans the others' start-up, seconds in which the first workers'
        # timers fire on chunks that only wait for a worker still importing torch
        start_file = self.workdir / "start"
        for w in plan.worker_ids:
            self.start(w, [*self.python, "host_stack.train.worker", *shared, "--worker", w,
                            "--sync", args.sync, "--rounds", str(args.rounds),
                            "--batch", str(args.batch), "--start-file", str(start_file)])
        per_round: dict[int, list[dict]] = {}
        done: dict[str, dict] = {}
        started: set[str] = set()
        with progress_bar(total=args.rounds, desc=f"train {args.model} ({args.sync})", unit="round",
                  quiet=args.quiet) as bar:
            while len(done) < plan.workers:
                name, rec = self.next_event(deadline)
                if rec["event"] == "ready":
                    started.add(name)
                    if len(started) == plan.workers:
                        start_file.touch()
                elif rec["event"] == "round":
                    recs = per_round.setdefault(rec["round"], [])
                    recs.append(rec)
                    if len(recs) == plan.workers:
                        bar.update(1)
                        bar.set_postfix(loss=f"{sum(r['loss'] for r in recs) / len(recs):.3f}")
                elif rec["event"] == "done":
                    done[name] = rec
        self.stop_all()
        ps_stats = {}
        for ps in ps_ids:
            path = self.workdir / f"{ps}.stats.json"
            ps_stats[ps] = json.loads(path.read_text()) if path.exists() else {}
        rounds = [summarize_round(r, per_round[r]) for r in sorted(per_round)]
        workers = [done[w] for w in plan.worker_ids]
        return TrainResult(plan, rounds, workers, ps_stats, time.monotonic() - t0)


def summarize_round(r: int, recs: list[dict]) -> dict:
    """One row of the report, the same for every sync scheme: the slowest worker sets the
    round and communication time; rate and bytes are per worker, averaged over workers
    (retransmissions, the spurious ones among them, and quantization error exist for INA
    only)."""
    rates = [x["bytes"] * 8 / x["comm_s"] / 1e6 for x in recs if x["comm_s"] > 0]
    return {
        "round": r,
        "round_s": max(x["compute_s"] + x["sync_s"] for x in recs),
        "comm_s": max(x["comm_s"] for x in recs),
        "rate_mbps": sum(rates) / len(rates) if rates else 0.0,
        "retx": sum(x.get("retx", 0) for x in recs),
        "spurious": sum(x.get("retx_spurious", 0) for x in recs),
        "loss": sum(x["loss"] for x in recs) / len(recs),
        "quant_rel_error": max(x.get("quant_rel_error", 0.0) for x in recs),
        "bytes": sum(x["bytes"] for x in recs) / len(recs),
    }


def train(args) -> TrainResult:
    """Run one job in a temporary directory (kept with --keep-logs for debugging)."""
    if args.keep_logs:
        workdir = Path(tempfile.mkdtemp(prefix="inart-train-"))
        with Launcher(args, workdir) as launcher:
            return launcher.run()
    with tempfile.TemporaryDirectory(prefix="inart-train-") as tmp, \
            Launcher(args, Path(tmp)) as launcher:
        return launcher.run()
