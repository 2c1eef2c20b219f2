"""`inart COMMAND` run as a user runs a long-lived command in a terminal, for tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from control_plane.repo import REPO, child_env


@contextmanager
def inart_foreground(*args: str, stop_timeout: float = 30.0) -> Iterator[str]:
    """Start `inart ARGS`, yield its first output line; on leaving, Ctrl-C (SIGINT) must end
    it with status 0 within ``stop_timeout`` s.  When the body fails it gets Ctrl-C too, so
    it stops what it started (a switch in a session of its own), and is killed only past
    ``stop_timeout``."""
    proc = subprocess.Popen([sys.executable, "-m", "control_plane.cli", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=REPO, env=child_env())
    try:
        yield proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=stop_timeout) == 0
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=stop_timeout)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def first_line(proc: subprocess.Popen) -> str:
    """A long-running command's first line; where the command already ended, all it printed
    (reading the rest of a live one would wait for it to end, and hang a failing test)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return line + proc.stdout.read() if proc.poll() is not None else line
