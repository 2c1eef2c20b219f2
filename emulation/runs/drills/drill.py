"""Failure drills: faults injected into a job that follows `inart serve` on a fig1 Mininet
network of embedded switches, seeded, under a deadline.

Each drill starts its own network and service (Unix socket, reconcile every
``RECONCILE_S`` s), submits one synthetic job (PSs in sum mode: every round's sums are
recomputed with numpy and compared on every worker, host_stack/train/hostrun.py), injects
its fault after a round the seed picks (plus a seeded delay into the next one) and checks
one of two promises:

- ``exact``: the job finished and every round's sums are exact on every worker;
- ``named-error``: every surviving worker ended with the same named error (exit status 3:
  ``PsUnreachable`` naming a PS, or ``FollowError``) within the deadline.

Either way nothing may be left behind: no switch interface, no process the drill started
(switches, PSs, workers, the fork servers, the service).  The recovery time runs from the
fault's start: for ``exact``, to the first round every worker completed after the fault was
over (the switch, link or service back; the worst of a drill's faults); for
``named-error``, to the last worker's exit.  docs/reliability.md says what each drill does
and what inart promises under it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import grpc

from control_plane.deploy.addressing import assign
from control_plane.model.plan import Plan
from control_plane.model.topologies import fig1
from control_plane.service.client import Client
from emulation.network.mininet_net import Network, leftovers
from emulation.runs.drills.faults import Faults
from emulation.runs.drills.outcome import DrillError, DrillResult, named_error
from emulation.runs.drills.service import TrackedHosts, serve
from host_stack.train.hostrun import TrafficConfig, TrafficError, run_hosts, service_job

SCALE = 0.25  # Mbit/s per topology unit, as in the emulation's tests
VALUES = 32 * 400


class Drill(Faults):
    """One drill's run: the network, the service, the job and the clock of the fault."""

    def __init__(self, name: str, seed: int, deadline_s: float, workdir: Path,
                 rounds: int, quiet: bool = True) -> None:
        super().__init__(name, seed, rounds, time.monotonic() + deadline_s)
        self.seed, self.quiet = seed, quiet
        self.deadline_s, self.workdir = deadline_s, workdir
        self.round_done: dict[int, float] = {}

    def run(self) -> DrillResult:
        t0 = time.monotonic()
        topo = fig1()
        addr = assign(topo)
        shutil.rmtree(self.workdir, ignore_errors=True)  # the last run's service state too
        self.workdir.mkdir(parents=True)
        switches, ours = list(topo.switches), []
        result: DrillResult | None = None
        try:
            with ExitStack() as stack:
                net = stack.enter_context(Network(topo, addr, self.workdir / "net", "embedded",
                                                  SCALE, quiet=True))
                ours = switches  # its interfaces (before: another run's, if any)
                self.service = stack.enter_context(serve(self.workdir, self.deadline))
                sock = self.service.sock
                client = stack.enter_context(Client(sock))
                net.prepare_versions()
                client.register_topology(topo, {sw: (addr.grpc_address(sw),
                                                     addr.device_id[sw])
                                                for sw in topo.switches})
                result = self._job(net, client, sock)
                self.pids.update(net.switch_pids())
                self.pids.update(net.host_pids())
                self.pids.update(self.service.pids)
        except (DrillError, grpc.RpcError, OSError, RuntimeError) as exc:
            result = self._result("failed", detail=f"{type(exc).__name__}: {exc}")
        finally:
            self.unsilence()
        if subprocess.run(["nft", "list", "table", "inet", f"inart_drill_{os.getpid()}"],
                          capture_output=True, timeout=10).returncode == 0:
            result.leftovers.append(f"nftables table inet inart_drill_{os.getpid()}")
        if self.service is not None:
            self.pids.update(self.service.pids)
        result.leftovers += leftovers(ours, sorted(self.pids))
        result.wall_s = time.monotonic() - t0
        if self.left() < 0 and result.outcome != "failed":
            result.outcome, result.detail = "failed", \
                f"the drill ran past its deadline of {self.deadline_s:.0f} s"
        return result

    def _result(self, outcome: str, **kw) -> DrillResult:
        done = sorted(self.round_done)
        before = [self.round_done[r] - self.round_done[r - 1] for r in done
                  if r - 1 in self.round_done and r <= self.fault_round]
        round_s = sorted(before)[len(before) // 2] if before else None
        return DrillResult(self.name, self.seed, outcome, kw.pop("recovery_s", None),
                           self.fault or "no fault injected", len(done), round_s, **kw)

    def _job(self, net: Network, client: Client, sock: str) -> DrillResult:
        cfg = TrafficConfig(rounds=self.rounds, values=VALUES, unit_bps=SCALE * 1e6,
                            deadline_s=max(1.0, self.left()), seed=self.seed)
        job = client.submit(model_size=cfg.values, name=f"drill-{self.name}")
        first = client.plan(job.id)
        plan = Plan.from_dict(json.loads(first.plan_json))
        hosts = TrackedHosts(net)
        stop_watch = self.watch(client)
        polled = threading.Event()
        poller = threading.Thread(target=self.poll_status, args=(client, polled), daemon=True)
        if self.name == "p4rt-silent":
            poller.start()
        inject = self.injector(net, hosts, plan, {"PS": list(first.pss),
                                                  "worker": list(first.workers)})

        def fault() -> None:
            try:
                time.sleep(self.fault_delay)
                inject()
            except BaseException as exc:  # noqa: BLE001 - reported in the result
                self.fault_error = exc

        faulters: list[threading.Thread] = []

        def on_round(r: int) -> None:
            self.round_done[r] = time.monotonic()
            if r in self.fault_rounds() and not (faulters and faulters[-1].is_alive()):
                faulters.append(threading.Thread(target=fault, daemon=True))
                faulters[-1].start()

        source = service_job(sock, job.id, list(first.workers), list(first.pss),
                             dict(first.ranks))
        stopped = ""
        try:
            res = run_hosts(hosts, source, cfg, self.workdir / "hosts", quiet=self.quiet,
                            on_round=on_round)
        except TrafficError as exc:
            stopped = str(exc)
        finally:
            for faulter in faulters:
                faulter.join(timeout=max(0.0, self.left()))
            stop_watch()
            if self.name != "p4rt-silent" or stopped:
                polled.set()
            self.pids.update(p.pid for p in hosts.procs.values())
        if stopped:
            return self._ended(hosts, list(first.workers), stopped)
        if self.fault_error is not None:
            return self._result("failed", detail=f"the fault failed: {self.fault_error!r}")
        if self.t_fault is None:
            return self._result("failed", detail="the job ended before the fault")
        if not res.exact:
            return self._result("failed", detail=f"sums not exact: {res.mismatches[:4]}")
        if self.name == "switch-restart":
            repaired = self.reinstalled()
            if repaired is None:
                return self._result("failed", detail=f"the service never reinstalled switch "
                                    f"{self.victim}")
            self.fault += f"; {repaired}"
        if self.name == "p4rt-silent":
            seen = None
            until = time.monotonic() + min(30.0, max(0.0, self.left()))
            while seen is None and time.monotonic() < until:
                time.sleep(0.2)
                seen = self.seen_again()
            polled.set()
            if seen is None:
                return self._result("failed", detail=f"the service did not see switch "
                                    f"{self.victim} go and come back: {self.status[-3:]}")
            self.fault += f"; {seen[1]}"
            return self._result("exact", recovery_s=seen[0] - self.t_fault)
        recovery = []  # each fault: to the first round every worker completed after it ended
        for t, end in zip(self.fault_times, self.fault_ends, strict=True):
            after = [done for done in self.round_done.values() if done > end]
            if not after:
                return self._result("failed", detail="no round completed after a fault")
            recovery.append(min(after) - t)
        return self._result("exact", recovery_s=max(recovery))

    def _ended(self, hosts: TrackedHosts, workers: list[str], why: str) -> DrillResult:
        """The job stopped (a process exited): every other worker must end with the same
        named error before the deadline."""
        if self.t_fault is None:
            return self._result("failed", detail=f"the job failed before the fault: {why}")
        victim = self.victim
        errors: dict[str, str] = {}
        last_exit = self.t_fault
        for w in workers:
            if w == victim:
                continue
            proc = hosts.procs[w]
            try:
                code = proc.wait(timeout=max(0.1, self.left()))
            except subprocess.TimeoutExpired:
                return self._result("failed", detail=f"worker {w} still running at the "
                                    f"deadline of {self.deadline_s:.0f} s")
            last_exit = max(last_exit, time.monotonic())
            text = (self.workdir / "hosts" / f"{w}.stderr").read_text(errors="replace")
            errors[w] = named_error(text) or ""
            if code != 3 or not errors[w]:
                return self._result("failed", detail=f"worker {w} exited with status {code} "
                                    f"without a named error: {text.strip()[-300:]}")
        named = set(errors.values())
        if self.name == "ps-kill" and named != {f"PsUnreachable (PS {victim})"}:
            return self._result("failed", detail=f"workers named {sorted(named)}, not the "
                                f"killed PS {victim}")
        if len({n.partition(" (")[0] for n in named}) != 1:
            return self._result("failed", detail=f"the workers ended with different errors: "
                                f"{errors}")
        return self._result("named-error", recovery_s=last_exit - self.t_fault,
                            error=", ".join(sorted(named)),
                            detail=f"job stopped: {why.splitlines()[0]}")


def run_drills(names: list[str], seed: int, deadline_s: float, out: Path, rounds: int = 12,
               on_result: Callable[[DrillResult], None] | None = None,
               quiet: bool = True) -> list[DrillResult]:
    """Run ``names`` one after another (each on its own network and service)."""
    results = []
    for name in names:
        result = Drill(name, seed, deadline_s, out / name, rounds, quiet).run()
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results
