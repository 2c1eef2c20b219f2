"""A Ray head on this machine for a sweep without a cluster (and for the tests): `ray start
--head --block` with every port Ray would otherwise fix (GCS 6379, the dashboard agent's
52365, the client server's 10001) taken from control_plane.localhost's free ports, no
dashboard, its own temp directory, and the machine's one ``emulation`` resource.

``--block`` keeps Ray's processes children of that one command: stopping it (SIGTERM) stops
exactly this head's processes, never another user's Ray (`ray stop` would stop them all), and
the kernel stops it when the sweep that started it dies (PR_SET_PDEATHSIG)."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from control_plane.localhost import free_ports
from control_plane.repo import REPO
from control_plane.sweep.kinds import EMULATION_RESOURCE

READY = "This command will now block forever"  # what `ray start --block` prints once up
START_TIMEOUT_S = 180.0
OBJECT_STORE_BYTES = 200 * 2**20  # results are small rows; Ray's default is 30% of memory
PR_SET_PDEATHSIG = 1


CONNECT_TIMEOUT_S = 5.0


class ClusterError(RuntimeError):
    """A Ray head that cannot be reached or started; the message says what to check."""


def check_address(address: str) -> None:
    """Refuse an address that is not HOST:PORT or where nothing listens, at once: Ray's own
    client retries such an address for minutes before it gives up."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(f"--ray-address {address!r}: expected HOST:PORT, the head's GCS "
                           f"address (what `ray start --head --port PORT` printed)")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ClusterError(f"--ray-address {address}: no Ray head answers there ({exc}); is "
                           f"`ray start --head --port {port}` running on {host}?") from exc


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it exits."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def worker_pythonpath() -> str:
    """PYTHONPATH for Ray's workers: the directory holding inart's packages (a checkout or
    site-packages), then this process's own PYTHONPATH (e.g. a directory of extra kinds)."""
    return os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)


class LocalHead:
    """A one-node Ray cluster started and stopped by this process (a context manager whose
    value is the address to ``ray.init``)."""

    def __init__(self, cpus: int | None = None, emulation: bool = True) -> None:
        self.cpus = cpus or os.cpu_count() or 1
        self.resources = {EMULATION_RESOURCE: 1} if emulation else {}
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []
        self.temp_dir: Path | None = None
        self.address = ""

    def command(self) -> list[str]:
        gcs, agent, agent_grpc, runtime_env, metrics, client, node, objects = free_ports(8)
        self.address = f"127.0.0.1:{gcs}"
        return [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
                "--node-ip-address=127.0.0.1", f"--port={gcs}",
                f"--dashboard-agent-listen-port={agent}",
                f"--dashboard-agent-grpc-port={agent_grpc}",
                f"--runtime-env-agent-port={runtime_env}", f"--metrics-export-port={metrics}",
                f"--ray-client-server-port={client}", f"--node-manager-port={node}",
                f"--object-manager-port={objects}", "--include-dashboard=false",
                f"--num-cpus={self.cpus}", f"--resources={json.dumps(self.resources)}",
                f"--object-store-memory={OBJECT_STORE_BYTES}", f"--temp-dir={self.temp_dir}",
                "--disable-usage-stats"]

    def __enter__(self) -> str:
        # short: Ray's unix sockets live under it (108 bytes at most for a socket path)
        self.temp_dir = Path(tempfile.mkdtemp(prefix="inart-ray-", dir="/tmp"))
        env = {**os.environ, "PYTHONPATH": worker_pythonpath()}
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=env,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        ready = threading.Event()
        threading.Thread(target=self._read, args=(ready,), daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise ClusterError("local Ray head did not start:\n" +
                                   "\n".join(self.output[-20:]))
        return self.address

    def _read(self, ready: threading.Event) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line.rstrip())
            if READY in line:
                ready.set()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
