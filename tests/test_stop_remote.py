"""stop_process on the local ssh client of a remote process signals the remote process (TERM,
then KILL if it lingers), never only the client, which would leave it running."""

from __future__ import annotations

import subprocess
import sys

from control_plane.processes import stop_process


class RemoteSleeper(subprocess.Popen):
    """A local process standing in for an ssh client; its 'remote' end ignores TERM."""

    def __init__(self, obey_term: bool) -> None:
        super().__init__([sys.executable, "-c", "import time; time.sleep(60)"])
        self.obey_term = obey_term
        self.sent: list[str] = []

    def signal_remote(self, sig: str) -> None:
        self.sent.append(sig)
        if sig == "KILL" or self.obey_term:
            super().kill()  # the remote process ends, so its ssh client exits


def test_remote_term_first():
    proc = RemoteSleeper(obey_term=True)
    stop_process(proc, grace=5)
    assert proc.sent == ["TERM"] and proc.poll() is not None


def test_remote_kill_after_grace():
    proc = RemoteSleeper(obey_term=False)
    stop_process(proc, grace=0.5)
    assert proc.sent == ["TERM", "KILL"] and proc.poll() is not None
