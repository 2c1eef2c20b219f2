"""A PS that serves every installed plan version of a service's job at once (follow.py).

Each version gets its own PsServer face: a socket on the PS's address in that version's bank,
the version's wire job id and result address.  All faces feed one ChunkAggregator, so the
shard's parameters, momentum and per-chunk rounds are one state whatever version a packet came
on: the round in flight on the old version completes there while the next one starts on the
new version.  Versions arrive from the service's Watch stream; a retired version's socket is
closed.  Nothing the service sends stops the PS: a version it cannot follow is reported on
stderr and left out (its workers then fail their HELLO with a clear error).
"""

from __future__ import annotations

import queue
import select
import sys
from collections import Counter

from host_stack.ina.aggregator import ChunkAggregator
from host_stack.ina.batchio import make_socket
from host_stack.ina.follow import ACTIVE, DRAINING, RETIRED, FollowError, HostVersion, ServiceLink
from host_stack.ina.impair import Impairment, wrap
from host_stack.ina.ps_server import PsServer, serve_until, shard_stats


class VersionedPs:
    """The packet loop of one PS over every installed version of its job."""

    def __init__(self, link: ServiceLink, ps: str, first: HostVersion, n: int, n_values: int,
                 aggregator: ChunkAggregator, impairment: Impairment,
                 gso: str = "loopback") -> None:
        self.link, self.ps, self.first = link, ps, first
        self.n, self.n_values, self.agg, self.impairment = n, n_values, aggregator, impairment
        self.gso = gso
        self.faces: dict[int, PsServer] = {}
        self.counters: Counter[str] = Counter()  # closed faces' and the loop's own
        self.stop = False
        self.checkpoint_requested = False
        self.updates = link.watch()
        for version in link.installed():
            self.add(version)

    def add(self, version: HostVersion) -> None:
        """Serve ``version`` (idempotent); FollowError if it moves the split or the workers."""
        if version.number in self.faces:
            return
        version.check_follows(self.first, self.n_values, self.n)
        host, port = version.addresses[self.ps]
        try:
            sock = wrap(make_socket((host, port)), self.impairment)
        except OSError as exc:
            raise FollowError(f"cannot bind {host}:{port}: {exc.strerror} (in bank B a PS "
                              f"answers on its alias: add it to the host, e.g. `ip addr add "
                              f"{host}/32 dev IFACE`)") from None
        workers = [version.addresses[w] for w in version.plan.worker_ids]
        self.counters["versions_served"] += 1
        self.faces[version.number] = PsServer(sock, version.plan.job, self.n, self.agg, workers,
                                              [version.result_to], self.gso)

    def remove(self, number: int) -> None:
        face = self.faces.pop(number, None)
        if face is not None:
            face.sock.close()
            self.counters.update(face.counters)

    def apply_updates(self) -> None:
        """Add and remove faces as the Watch stream announced versions."""
        while True:
            try:
                number, state = self.updates.get_nowait()
            except queue.Empty:
                return
            try:
                if number == 0:
                    raise FollowError(str(state))
                if state in (ACTIVE, DRAINING):
                    self.add(self.link.version(number))
                elif state == RETIRED:
                    self.remove(number)
            except (FollowError, OSError) as exc:
                self.counters["version_errors"] += 1
                print(f"ps {self.ps}: version {number}: {exc}", file=sys.stderr, flush=True)

    def poll(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for packets on any face and handle them; True if any."""
        socks = {face.sock: face for face in self.faces.values()}
        for face in socks.values():  # wake when an arrival impairment held back is due
            timeout = face.io.wait_limit(timeout)
        ready, _, _ = select.select(list(socks), [], [], timeout)
        ready = set(ready) | {sock for sock, face in socks.items() if face.io.has_due()}
        for sock in ready:
            socks[sock].poll(0.0)
        return bool(ready)

    def serve(self, idle_exit_s: float | None = None, on_idle=None) -> None:
        """Loop until ``stop`` is set or nothing arrived for ``idle_exit_s`` seconds; versions
        announced meanwhile are added or removed between two polls."""
        def tick() -> None:
            self.apply_updates()
            if on_idle is not None:
                on_idle()

        serve_until(self, idle_exit_s, tick, poll_s=0.05)

    def stats(self) -> dict[str, int]:
        total = Counter(self.counters)
        for face in self.faces.values():
            total.update(face.counters)
        return shard_stats(total, self.agg)

    def close(self) -> None:
        for number in list(self.faces):
            self.remove(number)
        self.link.close()
