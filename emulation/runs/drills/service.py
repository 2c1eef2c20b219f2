"""The drill's `inart serve` (killed and restarted by one drill) and the hosts whose processes
the drills kill by name."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from control_plane.processes import stop_process
from control_plane.repo import REPO, child_env
from emulation.network.mininet_net import Network
from emulation.runs.drills.outcome import DrillError

RECONCILE_S = 1.0  # how often the service reads every switch back


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
