"""Many embedded switches forked from one parent that imported the target once.

Why: a switch process started on its own imports grpc, protobuf and the target (~50 MB RSS,
mostly the same pages in every switch: 45 switches of fattree:6 = 2.5 GB).  Forked from one
parent after ``gc.freeze()`` (so the collector never writes to the inherited objects), those
pages stay shared copy-on-write.  Nothing else is shared: each child runs the same ``main``
as ``python -m emulation.targets.embedded`` -- its own ports, its own P4Runtime server, its
own program (pushed over P4Runtime as before), its own process and CPU time.

The parent (``python -m emulation.targets.embedded.farm``) reads one JSON request per line on
stdin, ``{"argv": [...], "log": PATH}``, forks, and answers ``{"pid": N}``; when a child exits
it writes ``{"exited": N, "status": S}`` (S as ``Popen.returncode``).  On EOF or SIGTERM it
stops every child and exits.  ``SwitchFarm`` is the client; its ``spawn`` returns a
``ForkedSwitch`` that the switch runner uses like a ``subprocess.Popen``.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from control_plane.processes import exited_children, stop_process
from control_plane.repo import child_env

REPLY_TIMEOUT_S = 30.0


# -- the parent process ---------------------------------------------------------------------------
def _say(obj: dict) -> None:
    """One line on stdout with one write (atomic on a pipe), safe inside a signal handler."""
    os.write(1, (json.dumps(obj) + "\n").encode())


def _reap(*_: object) -> None:
    for pid, status in exited_children():
        _say({"exited": pid, "status": status})


def _child(argv: list[str], log: str | None) -> None:
    """Become one switch: own session (killpg reaches it), output to its log, then main()."""
    from emulation.targets.embedded.__main__ import main

    rc = 1
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        if log:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
        else:  # fd 1 is the farm's reply stream: keep the switch's output off it
            os.dup2(2, 1)
        rc = main(argv)
    except BaseException as exc:  # noqa: BLE001 (a child must never return into the loop)
        print(f"embedded switch: {exc!r}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)


def serve() -> int:
    """The parent's loop: import everything a switch imports, freeze, fork on request."""
    import control_plane.observe.exporter  # noqa: F401
    import emulation.targets.embedded.__main__  # noqa: F401
    import emulation.targets.embedded.metrics  # noqa: F401
    import emulation.targets.embedded.p4runtime_server  # noqa: F401
    import emulation.targets.embedded.ports  # noqa: F401
    import emulation.targets.embedded.stats  # noqa: F401

    gc.collect()
    gc.freeze()
    children: set[int] = set()
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGCHLD, _reap)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for line in sys.stdin:
        if stopping:
            break
        try:
            req = json.loads(line)
            argv, log = [str(a) for a in req["argv"]], req.get("log")
        except (ValueError, KeyError, TypeError) as exc:
            _say({"error": f"bad request {line.strip()!r}: {exc}"})
            continue
        pid = os.fork()
        if pid == 0:
            _child(argv, log)
        children.add(pid)
        _say({"pid": pid})
    stop()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in children):
        time.sleep(0.05)
    for pid in children:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return ") Z " not in stat.read_text()
    except OSError:
        return False


# -- the client -----------------------------------------------------------------------------------
class FarmError(RuntimeError):
    """The farm process failed or did not answer; the message says how."""


class SwitchFarm:
    """The parent process, started on first use; ``close`` stops it and every switch."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.exited: dict[int, int] = {}  # pid -> returncode, from the parent's notices
        self._buf = b""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def spawn(self, argv: list[str], log: Path | None) -> ForkedSwitch:
        """Fork a switch running ``main(argv)``; its output goes to ``log``."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "emulation.targets.embedded.farm"],
                env=child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                start_new_session=True)
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps({"argv": argv, "log": str(log) if log else None})
                                   + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise FarmError(f"switch farm (pid {self.proc.pid}) exited with status "
                            f"{self.proc.poll()}") from None
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while True:
            for msg in self._read(max(0.0, deadline - time.monotonic())):
                if "pid" in msg:
                    return ForkedSwitch(int(msg["pid"]), self)
                if "error" in msg:
                    raise FarmError(f"switch farm: {msg['error']}")
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise FarmError(f"switch farm (pid {self.proc.pid}) did not fork the switch "
                                f"within {REPLY_TIMEOUT_S:.0f} s (status {self.proc.poll()})")

    def _read(self, timeout: float) -> list[dict]:
        """Messages available within ``timeout`` s; exit notices are recorded, all returned."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        if select.select([fd], [], [], timeout)[0]:
            chunk = os.read(fd, 65536)
            self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        msgs = [json.loads(x) for x in lines if x.strip()]
        for msg in msgs:
            if "exited" in msg:
                self.exited[int(msg["exited"])] = int(msg["status"])
        return msgs

    def returncode(self, pid: int) -> int | None:
        """The exit status the parent reported for ``pid`` (None: not reported yet)."""
        if pid not in self.exited and self.proc is not None and self.proc.stdout is not None:
            self._read(0.5)
        return self.exited.get(pid)

    def close(self) -> None:
        """EOF to the parent: it stops every child, waits for them, exits."""
        if self.proc is None:
            return
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None


class ForkedSwitch:
    """A switch the farm forked, with the part of ``Popen``'s interface its runners use.

    Liveness comes from a pidfd (the switch is the farm's child, not ours), the exit status
    from the farm's notice.
    """

    def __init__(self, pid: int, farm: SwitchFarm) -> None:
        self.pid = pid
        self.farm = farm
        self.returncode: int | None = None
        try:
            self._fd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:  # exited (and was reaped) already
            self._fd = None
            self._finish()

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._fd], [], [], 0)[0]:
            self._finish()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._fd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"switch pid {self.pid}", timeout or 0)
            self._finish()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def _finish(self) -> None:
        rc = self.farm.returncode(self.pid)
        self.returncode = rc if rc is not None else -1
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


if __name__ == "__main__":
    sys.exit(serve())
