"""Stopping a process tree reliably: used for switches and for the hosts' processes."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator


def stop_process(proc: subprocess.Popen | None, grace: float = 5.0) -> None:
    """SIGTERM the process and its group, SIGKILL them after ``grace`` seconds.

    A process with ``signal_remote`` (realhosts' SshProcess) is signalled where it runs: ending
    its local ssh client would leave it running.  Else the process itself is always signalled
    too: one started a moment ago may not have become its group's leader yet (mnexec calls
    setsid after the fork), so killpg alone could miss it.
    """
    if proc is None or proc.poll() is not None:
        return
    remote = getattr(proc, "signal_remote", None)
    if remote is not None:  # the local ssh client of a process on another machine
        for sig in ("TERM", "KILL"):
            remote(sig)
            try:
                proc.wait(timeout=grace if sig == "TERM" else 10)
                return
            except subprocess.TimeoutExpired:
                continue
        proc.kill()
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for send, target in ((os.killpg, proc.pid), (os.kill, proc.pid)):
            try:
                send(target, sig)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=grace if sig == signal.SIGTERM else 10)
            return
        except subprocess.TimeoutExpired:
            continue


def exited_children() -> Iterator[tuple[int, int]]:
    """Reap every child that has exited, without blocking: (pid, status as
    ``Popen.returncode``, negative when a signal killed it).  For servers that fork workers
    (the switch farm, the training fork server) and report each one's end."""
    while True:
        try:
            pid, raw = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)
