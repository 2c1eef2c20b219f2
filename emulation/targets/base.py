"""The one interface every switch target implements, and a running switch process.

A target says how it is launched (command line from ports, device id and gRPC address), what
it needs in its environment, which pipeline config it takes (control_plane/deploy/pipeline),
whether it can run here, and what build it is.  ``SwitchProcess`` starts one, waits until its
P4Runtime server answers, health-checks and stops it: the emulation, the PTF runner, the
benches, the tests and `inart switch` all start switches through it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

from control_plane.deploy.pipeline import Pipeline, pipeline_for
from control_plane.localhost import port_holder
from control_plane.processes import stop_process
from control_plane.repo import child_env

if TYPE_CHECKING:
    from emulation.targets.embedded.farm import ForkedSwitch, SwitchFarm

START_TIMEOUT_S = 60.0

# starts a switch's command line (with this environment, output to this file) elsewhere: on
# another server of an emulation (emulation/cluster)
Launch = Callable[[list[str], dict[str, str], IO[bytes] | None], subprocess.Popen]


class TargetError(RuntimeError):
    """A target cannot run here or a switch did not start; the message says which and why."""


@dataclass(frozen=True)
class SwitchSpec:
    """One switch instance: simple_switch_grpc's arguments, which every target takes."""

    device_id: int = 0
    ports: Mapping[int, str] = field(default_factory=dict)  # port number -> interface name
    grpc: str = "127.0.0.1:9559"
    log_level: str = "warn"
    log_file: Path | None = None
    extra: tuple[str, ...] = ()  # target options before '--'

    def interface_args(self) -> list[str]:
        return [a for port, iface in sorted(self.ports.items()) for a in ("-i", f"{port}@{iface}")]


class Target(ABC):
    """A P4 switch implementation that serves P4Runtime and starts without a program."""

    name: str

    @abstractmethod
    def unavailable(self) -> str | None:
        """None when this target can run here, else the reason it cannot."""

    @abstractmethod
    def command(self, spec: SwitchSpec) -> list[str]:
        """The switch's command line (``--no-p4``: the controller pushes the pipeline)."""

    def env(self) -> dict[str, str]:
        """Environment of the switch process."""
        return child_env()

    def pipeline(self, build_dir: Path | None = None) -> Pipeline:
        """The pipeline config of our program for this target."""
        return pipeline_for(self.name) if build_dir is None else pipeline_for(self.name,
                                                                              build_dir)

    def describe(self) -> str:
        """Which binary and build this is (benchmarks print it beside their figures)."""
        return self.name


def port_open(address: str, netns: str | None = None) -> bool:
    """Whether a TCP server listens at ``host:port`` (inside network namespace ``netns``)."""
    host, _, port = address.rpartition(":")
    if netns is None:
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex((host, int(port))) == 0
    probe = ("import socket,sys\ns=socket.socket()\ns.settimeout(0.5)\n"
             f"sys.exit(s.connect_ex(({host!r},{int(port)})))")
    return subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", probe],
                          capture_output=True, timeout=10).returncode == 0


class SwitchProcess:
    """A running switch of some target; a context manager that always stops it.

    ``netns`` runs it inside a network namespace (its ports live there); ``log`` receives its
    output (a file path; default: this process's stdout/stderr).  ``launch`` starts the
    command somewhere else (a server of a cluster run; the switch listens on ``spec.grpc``
    there).  ``farm`` (embedded target,
    root namespace): fork it from that SwitchFarm instead of starting a new interpreter, so
    many switches share their imported code (emulation/targets/embedded/farm.py).
    """

    def __init__(self, target: Target, spec: SwitchSpec, netns: str | None = None,
                 log: Path | None = None, farm: SwitchFarm | None = None,
                 launch: Launch | None = None) -> None:
        if farm is not None and (netns is not None or target.name != "embedded"):
            raise TargetError(f"a switch farm forks embedded switches in the root namespace, "
                              f"not target {target.name!r} in netns {netns!r}")
        # absolute: the switch (or the farm that forks it) may run in another directory
        log = log.resolve() if log is not None else None
        if spec.log_file is not None:
            spec = replace(spec, log_file=spec.log_file.resolve())
        self.target, self.spec, self.netns, self.log = target, spec, netns, log
        self.farm = farm
        self.launch = launch
        self.proc: subprocess.Popen | ForkedSwitch | None = None

    def start(self) -> SwitchProcess:
        reason = self.target.unavailable() if self.launch is None else None  # else: its server's
        if reason:
            raise TargetError(f"target '{self.target.name}': {reason}")
        if port_open(self.spec.grpc, self.netns):
            # else the readiness check would take the other process's answer for this one's
            holder = "another process in netns " + self.netns if self.netns else \
                port_holder(int(self.spec.grpc.rpartition(":")[2]))
            raise TargetError(f"{self.target.name} switch (device {self.spec.device_id}): "
                              f"P4Runtime address {self.spec.grpc} is already in use by "
                              f"{holder}")
        if self.farm is not None:
            self.proc = self.farm.spawn(self.target.main_args(self.spec), self.log)  # type: ignore[attr-defined]
            return self
        prefix = ["ip", "netns", "exec", self.netns] if self.netns else []
        out = open(self.log, "ab") if self.log else None  # noqa: SIM115
        try:
            if self.launch is not None:
                self.proc = self.launch(self.target.command(self.spec), self.target.env(), out)
                return self
            self.proc = subprocess.Popen([*prefix, *self.target.command(self.spec)], stdout=out,
                                         stderr=subprocess.STDOUT if out else None,
                                         env=self.target.env(),
                                         start_new_session=True)
        finally:
            if out is not None:
                out.close()
        return self

    def health(self) -> str | None:
        """None when the process runs and its P4Runtime port answers, else what is wrong."""
        if self.proc is None:
            return "not started"
        if self.proc.poll() is not None:
            return f"exited with status {self.proc.returncode}"
        if not port_open(self.spec.grpc, self.netns):
            return f"P4Runtime server {self.spec.grpc} not answering"
        return None

    def wait_ready(self, deadline: float | None = None) -> None:
        """Block until the P4Runtime server answers; TargetError (with the log tail) if not."""
        deadline = deadline if deadline is not None else time.monotonic() + START_TIMEOUT_S
        while True:
            problem = self.health()
            if problem is None:
                return
            if self.proc is None or self.proc.poll() is not None:
                raise TargetError(f"{self.target.name} switch (device {self.spec.device_id}) "
                                  f"{problem} before its P4Runtime server came up{self._tail()}")
            if time.monotonic() > deadline:
                raise TargetError(f"{self.target.name} switch (device {self.spec.device_id}): "
                                  f"{problem} in time{self._tail()}")
            time.sleep(0.2)

    def _tail(self, chars: int = 1500) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return f"; log {self.log}:\n{self.log.read_text(errors='replace')[-chars:]}"

    def stop(self) -> None:
        stop_process(self.proc)

    def __enter__(self) -> SwitchProcess:
        try:
            self.start().wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def spec_from_interfaces(interfaces: Sequence[str], **kw: object) -> SwitchSpec:
    """A spec whose ports are 1..n on ``interfaces`` in order."""
    return SwitchSpec(ports={i + 1: name for i, name in enumerate(interfaces)}, **kw)  # type: ignore[arg-type]
