"""The drills' faults (each run on its own thread) and what they watch of the service while
the fault lasts; Drill (drill.py) is a Faults that also runs the network and the job."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable

import grpc

from control_plane.model.plan import Plan
from control_plane.service.client import Client
from control_plane.service.proto import inart_controller_pb2 as pb
from emulation.network.mininet_net import Network
from emulation.runs.drills.service import Service, TrackedHosts

SWITCH_DOWN_S = 1.0  # how long a killed switch stays down before it restarts
LINK_EVERY = 3  # rounds between two flaps of the link-flap drill
SILENT_S = 10.0  # how long the p4rt-silent drill's switch does not answer P4Runtime


class Faults:
    """A drill's fault: which, when (a seeded round and delay), its clock (when each fault
    began and was over) and what the service did meanwhile."""

    def __init__(self, name: str, seed: int, rounds: int, deadline: float) -> None:
        self.name, self.rounds, self.deadline = name, rounds, deadline
        self.rng = random.Random(f"{name}/{seed}")
        # the round after which the (first) fault comes; three at least follow it
        self.fault_round = self.rng.randint(1, 2 if name == "link-flap" else rounds - 4)
        self.fault_delay = self.rng.uniform(0.0, 0.2)  # into the next round
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
