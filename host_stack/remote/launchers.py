"""Running commands on the hosts of an inventory: a network namespace on this machine
(``ip netns exec``) or a machine reached over SSH, behind one small interface.

A ``HostLauncher`` starts the job's long-running processes (``popen``), runs short commands
(``run``: checks, ARP, counters), moves the job's files (``share``/``touch``/``fetch``, same
absolute paths on both sides) and stops everything it started (``stop``).  Over SSH, killing
the local ``ssh`` does not reach the remote process, so every remote process writes its pid
into a per-run directory on its host first and ``stop`` signals those pids there (TERM, then
KILL): no process is left behind on a host, also after Ctrl-C or a lost connection.
``Fleet`` dispatches by host name and is what host_stack/train/hostrun.run_hosts drives.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from abc import ABC, abstractmethod
from pathlib import Path

from control_plane.processes import stop_process
from control_plane.repo import child_env
from host_stack.remote.hosts import HostSpec
from host_stack.train.hostrun import HostFiles

RUN_TIMEOUT_S = 30.0
STOP_GRACE_S = 3.0


class LaunchError(RuntimeError):
    """A host could not be reached or a command on it failed; the message names the host."""


class HostLauncher(HostFiles, ABC):
    """Commands on one host."""

    def __init__(self, spec: HostSpec, run_dir: Path) -> None:
        self.spec = spec
        self.run_dir = run_dir  # this run's directory, the same path on the host
        self.procs: list[subprocess.Popen] = []

    def argv(self, cmd: list[str]) -> list[str]:
        """``cmd`` with this machine's interpreter replaced by the host's."""
        return [self.spec.python, *cmd[1:]] if cmd[:1] == [sys.executable] else list(cmd)

    @abstractmethod
    def popen(self, cmd: list[str], env: dict[str, str] | None = None,
              **kwargs) -> subprocess.Popen:
        """Start a process of the job on the host (in its checkout of inart)."""

    @abstractmethod
    def run(self, cmd: list[str], timeout: float = RUN_TIMEOUT_S, input: bytes | None = None,
            in_repo: bool = True) -> subprocess.CompletedProcess:
        """A short command on the host; its output captured (bytes)."""

    def stop(self) -> None:
        """Stop every process this launcher started; safe to call twice."""
        for proc in self.procs:
            stop_process(proc, grace=STOP_GRACE_S)
        self.procs.clear()

    def cleanup(self) -> None:
        """Remove this run's directory from the host (after ``stop``; nothing where the host
        shares this machine's filesystem)."""

    def _track(self, proc: subprocess.Popen) -> subprocess.Popen:
        self.procs.append(proc)
        return proc


class NetnsLauncher(HostLauncher):
    """A host that is a network namespace of this machine (tests, single-machine setups)."""

    def prefix(self) -> list[str]:
        assert self.spec.netns is not None
        return ["ip", "netns", "exec", self.spec.netns]

    def popen(self, cmd, env=None, **kwargs):
        env = child_env(PYTHONUNBUFFERED="1", PYTHONPATH=self.spec.repo, **(env or {}))
        return self._track(subprocess.Popen([*self.prefix(), *self.argv(cmd)], env=env,
                                            cwd=self.spec.repo, start_new_session=True,
                                            **kwargs))

    def run(self, cmd, timeout=RUN_TIMEOUT_S, input=None, in_repo=True):
        env = child_env(PYTHONPATH=self.spec.repo)
        return subprocess.run([*self.prefix(), *self.argv(cmd)], input=input, env=env,
                              cwd=self.spec.repo if in_repo and Path(self.spec.repo).is_dir()
                              else None, capture_output=True, timeout=timeout)


class SshLauncher(HostLauncher):
    """A host reached with ``ssh user@address`` (key-based, no password prompt)."""

    def ssh(self) -> list[str]:
        s = self.spec.ssh
        assert s is not None
        argv = ["ssh", "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                "-o", "StrictHostKeyChecking=accept-new", "-o", "LogLevel=ERROR",
                "-p", str(s.port)]
        if s.key:
            argv += ["-i", str(Path(s.key).expanduser())]
        for option in s.options:
            argv += ["-o", option]
        return [*argv, f"{s.user}@{s.address}", "--"]

    def remote(self, cmd: list[str], env: dict[str, str] | None = None,
               in_repo: bool = True, pidfile: str | None = None) -> str:
        """The shell line run on the host."""
        repo = shlex.quote(self.spec.repo)
        parts = []
        if pidfile:
            # written aside, then renamed: a reader (stop, signal) never sees an empty pid
            parts.append(f"mkdir -p {shlex.quote(str(self.pid_dir))} && "
                         f"echo $$ > {shlex.quote(pidfile + '.new')} && "
                         f"mv {shlex.quote(pidfile + '.new')} {shlex.quote(pidfile)}")
        if in_repo:
            parts.append(f"cd {repo}")
        variables = {"PYTHONPATH": self.spec.repo, **(env or {})} if in_repo else dict(env or {})
        assign = " ".join(f"{k}={shlex.quote(v)}" for k, v in variables.items())
        parts.append(f"exec env {assign} {shlex.join(self.argv(cmd))}".replace("env  ", "env "))
        return " && ".join(parts)

    @property
    def pid_dir(self) -> Path:
        return self.run_dir / f"pids-{self.spec.name}"

    def popen(self, cmd, env=None, **kwargs):
        pidfile = str(self.pid_dir / f"{len(self.procs)}.pid")
        line = self.remote(cmd, {"PYTHONUNBUFFERED": "1", **(env or {})}, pidfile=pidfile)
        return self._track(SshProcess(self, pidfile, [*self.ssh(), line],
                                      stdin=subprocess.DEVNULL, start_new_session=True,
                                      **kwargs))

    def signal(self, pidfile: str, sig: str) -> None:
        """Send ``sig`` to the remote process that wrote ``pidfile`` (if it still runs)."""
        self.signal_all([pidfile], sig)

    def signal_all(self, pidfiles: list[str], sig: str) -> None:
        """``signal`` for several processes of this host in one SSH command."""
        each = "; ".join(f"[ -f {f} ] && kill -{sig} $(cat {f}) 2>/dev/null"
                         for f in map(shlex.quote, pidfiles))
        try:
            self.run(["sh", "-c", f"{each}; true"], timeout=20, in_repo=False)
        except (subprocess.TimeoutExpired, OSError):
            pass  # unreachable: stop() and the processes' own deadlines remain

    def run(self, cmd, timeout=RUN_TIMEOUT_S, input=None, in_repo=True):
        return subprocess.run([*self.ssh(), self.remote(cmd, in_repo=in_repo)], input=input,
                              capture_output=True, timeout=timeout,
                              stdin=None if input is not None else subprocess.DEVNULL)

    def stop(self) -> None:
        """Signal the pids the remote processes recorded (TERM, then KILL), then end the local
        ssh clients."""
        if self.procs:
            pids = shlex.quote(str(self.pid_dir))
            each = f'for f in {pids}/*.pid; do kill -%s $(cat "$f") 2>/dev/null; done'
            script = (f"[ -d {pids} ] || exit 0; {each % 'TERM'}; sleep {STOP_GRACE_S:g}; "
                      f"{each % 'KILL'}; rm -rf {pids}")
            try:
                self.run(["sh", "-c", script], timeout=30, in_repo=False)
            except (subprocess.TimeoutExpired, OSError):
                pass  # the host is gone; its processes end with their own deadlines
        super().stop()

    def cleanup(self) -> None:
        try:
            self.run(["rm", "-rf", str(self.run_dir)], in_repo=False)
        except (subprocess.TimeoutExpired, OSError):
            pass  # unreachable: /tmp is the host's to clear

    def share(self, hosts, paths):
        for path in paths:
            self._checked(["sh", "-c", f"mkdir -p {shlex.quote(str(path.parent))} && "
                                       f"cat > {shlex.quote(str(path))}"],
                          f"copying {path}", input=path.read_bytes())

    def touch(self, hosts, path):
        self._checked(["touch", str(path)], f"creating {path}")

    def fetch(self, host, path):
        proc = self.run(["cat", str(path)], in_repo=False)
        if proc.returncode == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(proc.stdout)

    def _checked(self, cmd: list[str], what: str, input: bytes | None = None) -> None:
        proc = self.run(cmd, input=input, in_repo=False)
        if proc.returncode != 0:
            raise LaunchError(f"{self.spec.describe()}: {what} failed: "
                              f"{proc.stderr.decode(errors='replace').strip()}")


class SshProcess(subprocess.Popen):
    """The local ssh client of a remote process: ``terminate``/``kill`` signal the remote
    process itself (signalling the client would leave it running)."""

    def __init__(self, launcher: SshLauncher, pidfile: str, argv: list[str], **kwargs) -> None:
        super().__init__(argv, **kwargs)
        self.launcher, self.pidfile = launcher, pidfile

    def signal_remote(self, sig: str) -> None:
        """Send ``sig`` (TERM, KILL) to the remote process (control_plane/processes.py)."""
        self.launcher.signal(self.pidfile, sig)

    def terminate(self) -> None:
        self.signal_remote("TERM")

    def kill(self) -> None:
        self.signal_remote("KILL")
        super().kill()


LAUNCHERS = {"netns": NetnsLauncher, "ssh": SshLauncher}


class Fleet(HostFiles):
    """Every host of an inventory, by name: ``run_hosts``' hosts and files."""

    def __init__(self, hosts: dict[str, HostSpec], run_dir: Path) -> None:
        self.hosts = {name: LAUNCHERS[spec.launcher](spec, run_dir)
                      for name, spec in hosts.items()}

    def __getitem__(self, name: str) -> HostLauncher:
        return self.hosts[name]

    def popen(self, host: str, cmd: list[str], env: dict[str, str] | None = None,
              **kwargs) -> subprocess.Popen:
        return self.hosts[host].popen(cmd, env, **kwargs)

    def share(self, hosts: list[str], paths: list[Path]) -> None:
        for h in hosts:
            self.hosts[h].share([h], paths)

    def touch(self, hosts: list[str], path: Path) -> None:
        for h in hosts:
            self.hosts[h].touch([h], path)

    def fetch(self, host: str, path: Path) -> None:
        self.hosts[host].fetch(host, path)

    def stop(self) -> None:
        """Stop every process on every host (each host's failure does not stop the rest)."""
        for launcher in self.hosts.values():
            launcher.stop()

    def cleanup(self) -> None:
        for launcher in self.hosts.values():
            launcher.cleanup()
