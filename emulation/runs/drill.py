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
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc

from control_plane.deploy.addressing import assign
from control_plane.model.plan import Plan
from control_plane.model.topologies import fig1
from control_plane.processes import stop_process
from control_plane.repo import REPO, child_env
from control_plane.service.client import Client
from control_plane.service.proto import inart_controller_pb2 as pb
from emulation.network.mininet_net import Network, leftovers
from host_stack.train.hostrun import TrafficConfig, TrafficError, run_hosts, service_job

# drill -> what it does (the CLI's help and docs/reliability.md say the same)
DRILLS: dict[str, str] = {
    "switch-restart": "an aggregating switch is killed (SIGKILL) mid-round and restarted "
                      "empty; the service reinstalls it, the transport recovers",
    "ps-kill": "a PS process is killed (SIGKILL) mid-round; every worker ends with "
               "PsUnreachable naming it",
    "worker-kill": "a worker process is killed (SIGKILL) mid-round; every other worker ends "
                   "with PsUnreachable",
    "link-flap": "a link the plan uses goes down and up again every few rounds, the service "
                 "not told; the transport recovers",
    "service-restart": "inart serve is killed (SIGKILL) mid-round and restarted on its state; "
                       "the hosts ride through it",
    "p4rt-silent": "an aggregating switch stops answering P4Runtime for a while but still "
                   "forwards; the service marks it unreachable, answers meanwhile and finds it "
                   "again",
}
# what inart promises under each drill's fault (docs/reliability.md)
PROMISES = {"switch-restart": "exact", "ps-kill": "named-error", "worker-kill": "named-error",
            "link-flap": "exact", "service-restart": "exact", "p4rt-silent": "exact"}
SCALE = 0.25  # Mbit/s per topology unit, as in the emulation's tests
VALUES = 32 * 400
RECONCILE_S = 1.0  # how often the service reads every switch back
SWITCH_DOWN_S = 1.0  # how long a killed switch stays down before it restarts
LINK_EVERY = 3  # rounds between two flaps of the link-flap drill
SILENT_S = 10.0  # how long the p4rt-silent drill's switch does not answer P4Runtime
# a worker's transport error line (exit status 3) -> its named error
NAMED_ERRORS = (
    (re.compile(r"error: (?:worker rank \d+: )?PS (\S+) at .+? did not answer"),
     "PsUnreachable (PS {0})"),
    (re.compile(r"error: (?:worker rank \d+: )?no HELLO reply from PS (\S+)"),
     "PsUnreachable (PS {0})"),
    (re.compile(r"error: service \S+: (\w+) for job \d+: (\w+)"), "FollowError ({0}: {1})"),
)


def named_error(text: str) -> str | None:
    """The named error of a worker's stderr (None: none it knows)."""
    for pattern, name in NAMED_ERRORS:
        found = pattern.search(text)
        if found:
            return name.format(*found.groups())
    return None


class DrillError(RuntimeError):
    """A drill could not run (its network or service did not come up) or passed its
    deadline; the message says which."""


@dataclass
class DrillResult:
    drill: str
    seed: int
    outcome: str  # exact | named-error | failed
    recovery_s: float | None  # from the fault to the job's recovery (see the module doc)
    fault: str  # what was done, and in which round
    rounds: int  # rounds every worker completed
    round_s: float | None  # median round time before the fault
    error: str = ""  # the named error every surviving worker ended with
    detail: str = ""  # why it failed, or what else happened
    leftovers: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        """The outcome inart promises under this drill's fault, and nothing left behind."""
        return self.outcome == PROMISES[self.drill] and not self.leftovers

    def line(self) -> str:
        rec = "-" if self.recovery_s is None else f"{self.recovery_s:.2f}"
        base = "-" if self.round_s is None else f"{self.round_s:.2f}"
        out = (f"drill {self.drill}: {'ok' if self.ok else 'FAILED'}, outcome {self.outcome}, "
               f"recovery {rec} s (round {base} s), {self.fault}")
        if self.error:
            out += f"; error: {self.error}"
        if self.leftovers:
            out += f"; left behind: {', '.join(self.leftovers)}"
        if self.detail and not self.ok:
            out += f"; {self.detail}"
        return out

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


class Service:
    """`inart serve` on a Unix socket in ``workdir``, its output in ``workdir/serve.log``;
    ``start`` again after ``kill`` restarts it on the same state and socket."""

    def __init__(self, workdir: Path) -> None:
        self.workdir, self.sock = workdir, f"unix:{workdir / 'serve.sock'}"
        self.proc: subprocess.Popen | None = None
        self.pids: list[int] = []

    def start(self, deadline: float) -> None:
        self.proc = proc = subprocess.Popen(
            [sys.executable, "-m", "control_plane.cli", "serve", "--listen", self.sock,
             "--state", str(self.workdir / "state"), "--reconcile-interval", str(RECONCILE_S),
             "--drain-seconds", "1", "--metrics", "off"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
            env=child_env())
        self.pids.append(proc.pid)
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(max(1.0, deadline - time.monotonic()))
        if not first or "listening on" not in first[0]:
            raise DrillError(f"inart serve did not start in time: "
                             f"{first[0].strip() if first else 'no line'}")

        def keep() -> None:  # the rest of its output, for the drill's logs
            with open(self.workdir / "serve.log", "a") as log:
                log.write(first[0])
                for line in proc.stdout:
                    log.write(line)
                    log.flush()

        threading.Thread(target=keep, daemon=True).start()

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM (it stops as on Ctrl-C), SIGKILL past 30 s."""
        stop_process(self.proc, grace=30.0)


@contextmanager
def serve(workdir: Path, deadline: float):
    """A started Service, stopped on leaving."""
    service = Service(workdir)
    try:
        service.start(deadline)
        yield service
    finally:
        service.stop()


class TrackedHosts:
    """The network's hosts, remembering the last process started on each (the drills kill
    them by name)."""

    def __init__(self, net: Network) -> None:
        self.net = net
        self.procs: dict[str, subprocess.Popen] = {}

    def popen(self, host: str, cmd: list[str], env: dict[str, str] | None = None, **kw):
        proc = self.net.popen(host, cmd, env=env, **kw)
        self.procs[host] = proc
        return proc


class Drill:
    """One drill's run: the network, the service, the job and the clock of the fault."""

    def __init__(self, name: str, seed: int, deadline_s: float, workdir: Path,
                 rounds: int, quiet: bool = True) -> None:
        self.name, self.seed, self.rounds, self.quiet = name, seed, rounds, quiet
        self.deadline_s, self.workdir = deadline_s, workdir
        self.deadline = time.monotonic() + deadline_s
        self.rng = random.Random(f"{name}/{seed}")
        # the round after which the (first) fault comes; three at least follow it
        self.fault_round = self.rng.randint(1, 2 if name == "link-flap" else rounds - 4)
        self.fault_delay = self.rng.uniform(0.0, 0.2)  # into the next round
        self.round_done: dict[int, float] = {}
        self.fault_times: list[float] = []  # when each fault began
        self.fault_ends: list[float] = []  # and when it was over (the element back)
        self.fault, self.victim = "", ""
        self.fault_error: BaseException | None = None
        self.pids: set[int] = set()
        self.t_up: float | None = None  # a restarted switch's P4Runtime answers again
        self.service: Service | None = None
        self.silenced = ""  # the nftables table that keeps a switch's P4Runtime silent
        self.status: list[tuple[float, bool, float]] = []  # (when, reachable, GetTopology s)
        self.reinstalls: list[tuple[float, pb.SwitchReconcile]] = []  # the service's repairs

    @property
    def t_fault(self) -> float | None:
        return self.fault_times[0] if self.fault_times else None

    def fault_rounds(self) -> range:
        """The rounds after which a fault comes: one, or a link flap every LINK_EVERY."""
        if self.name == "link-flap":
            return range(self.fault_round, self.rounds - 2, LINK_EVERY)
        return range(self.fault_round, self.fault_round + 1)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    # -- faults (each runs on its own thread, ``fault_delay`` s after ``fault_round``) ----
    def _switch_restart(self, net: Network, plan: Plan) -> None:
        name = self.rng.choice(sorted({s.switch for s in plan.streams}))
        sw = net.net.get(name)
        self.pids.add(sw.switch.proc.pid)
        self.fault_times.append(time.monotonic())
        sw.switch.proc.send_signal(signal.SIGKILL)
        sw.switch.proc.wait(timeout=10)
        time.sleep(SWITCH_DOWN_S)
        sw.switch.start()
        sw.switch.wait_ready(min(self.deadline, time.monotonic() + 60))
        self.t_up, self.victim = time.monotonic(), name
        self.fault_ends.append(self.t_up)
        self.pids.add(sw.switch.proc.pid)
        self.fault = (f"switch {name} killed in round {self.fault_round + 1}, up again "
                      f"{self.t_up - self.t_fault:.2f} s later")

    def watch(self, client: Client) -> Callable[[], None]:
        """Record the service's reconciles that repaired a switch (pipeline pushed, entries
        written) from its Watch stream; returns what stops it."""
        stream = client.watch(timeout=max(1.0, self.left()))

        def follow() -> None:
            try:
                for ev in stream:
                    if ev.WhichOneof("what") == "reconcile":
                        now = time.monotonic()
                        self.reinstalls += [(now, sw) for sw in ev.reconcile.switches
                                            if sw.pipeline_pushed or sw.inserted]
            except grpc.RpcError:
                pass  # cancelled, or past the deadline

        threading.Thread(target=follow, daemon=True).start()
        return stream.cancel

    def reinstalled(self) -> str | None:
        """How the service repaired the restarted switch (None: it did not)."""
        for t, sw in self.reinstalls:
            if sw.name == self.victim and self.t_up is not None and t >= self.t_fault:
                return (f"the service reinstalled it {max(0.0, t - self.t_up):.2f} s after "
                        f"(pipeline {'pushed' if sw.pipeline_pushed else 'kept'}, "
                        f"{sw.inserted} entries)")
        return None

    def _kill(self, hosts: TrackedHosts, node: str, what: str) -> None:
        self.fault_times.append(time.monotonic())
        self.victim = node
        hosts.procs[node].send_signal(signal.SIGKILL)
        self.fault = f"{what} {node} killed in round {self.fault_round + 1}"

    def _service_restart(self) -> None:
        assert self.service is not None
        self.fault_times.append(time.monotonic())
        self.service.kill()
        self.service.start(self.deadline)
        self.fault_ends.append(time.monotonic())
        self.fault = (f"inart serve killed (SIGKILL) in round {self.fault_round + 1}, "
                      f"listening again {time.monotonic() - self.t_fault:.2f} s later")

    def _flap(self, net: Network, link: tuple[str, str], down_s: float) -> None:
        self.fault_times.append(time.monotonic())
        net.set_link(*link, up=False)
        time.sleep(down_s)
        net.set_link(*link, up=True)
        self.fault_ends.append(time.monotonic())
        self.victim = "-".join(link)
        self.fault = (f"link {self.victim} down {down_s:.2f} s after rounds "
                      f"{', '.join(str(r + 1) for r in self.fault_rounds())[:60]}")

    def _silence(self, name: str, port: int) -> None:
        """Drop every TCP segment to or from the switch's P4Runtime port (loopback, root
        namespace) for SILENT_S: the switch runs and forwards, its P4Runtime never answers."""
        self.victim, self.silenced = name, f"inart_drill_{os.getpid()}"
        table = f"inet {self.silenced}"
        script = (f"add table {table}\n"
                  f"add chain {table} input {{ type filter hook input priority -10; }}\n"
                  f"add rule {table} input tcp dport {port} drop\n"
                  f"add rule {table} input tcp sport {port} drop\n")
        self.fault_times.append(time.monotonic())
        subprocess.run(["nft", "-f", "-"], input=script, text=True, check=True,
                       capture_output=True, timeout=10)
        time.sleep(SILENT_S)
        self.unsilence()
        self.fault_ends.append(time.monotonic())
        self.fault = (f"switch {name}'s P4Runtime silent for {SILENT_S:.0f} s from round "
                      f"{self.fault_round + 1}")

    def unsilence(self) -> None:
        if self.silenced:
            subprocess.run(["nft", "delete", "table", "inet", self.silenced],
                           capture_output=True, timeout=10)
            self.silenced = ""

    def poll_status(self, client: Client, stop: threading.Event) -> None:
        """The service's view of the silenced switch every 0.2 s, and how long it took to
        answer (its API must not wait for a switch that does not answer)."""
        while not stop.wait(0.2):
            if not self.victim:
                continue
            t = time.monotonic()
            try:
                state = client.topology()
            except grpc.RpcError:
                continue
            reachable = next((sw.reachable for sw in state.switches if sw.name == self.victim),
                             True)
            self.status.append((t, reachable, time.monotonic() - t))

    def seen_again(self) -> tuple[float, str] | None:
        """When the service saw the silenced switch unreachable, then reachable again after
        the silence: (the time it was seen back, what happened), or None."""
        start, end = self.t_fault, self.fault_ends[0] if self.fault_ends else None
        lost = next((t for t, ok, _ in self.status if not ok and t >= start), None)
        back = next((t for t, ok, _ in self.status if ok and lost and t > lost
                     and end and t >= end), None)
        if lost is None or back is None:
            return None
        slowest = max((d for t, _, d in self.status if start <= t <= back), default=0.0)
        return back, (f"the service saw it unreachable {lost - start:.2f} s in and reachable "
                      f"{back - end:.2f} s after it answered again; GetTopology answered "
                      f"within {slowest:.2f} s meanwhile")

    def injector(self, net: Network, hosts: TrackedHosts, plan: Plan,
                 victims: dict[str, list[str]]) -> Callable[[], None]:
        if self.name == "switch-restart":
            return lambda: self._switch_restart(net, plan)
        if self.name == "service-restart":
            return self._service_restart
        if self.name == "p4rt-silent":
            name = self.rng.choice(sorted({s.switch for s in plan.streams}))
            return lambda: self._silence(name, net.addr.grpc_port[name])
        if self.name == "link-flap":
            used = sorted({tuple(sorted(hop)) for path in [*(f.path for f in plan.flows),
                                                           *(s.path for s in plan.streams)]
                           for hop in zip(path, path[1:], strict=False)})
            link, down_s = self.rng.choice(used), self.rng.uniform(0.3, 1.0)
            return lambda: self._flap(net, link, down_s)
        what = "PS" if self.name == "ps-kill" else "worker"
        node = self.rng.choice(sorted(victims[what]))
        return lambda: self._kill(hosts, node, what)

    # -- the run ------------------------------------------------------------------------------
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
