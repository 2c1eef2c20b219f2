"""Suite-wide: Ctrl-C reaches the processes the tests start, however pytest itself was started.

A non-interactive shell starts background jobs with SIGINT ignored, and an ignored signal stays
ignored across exec: a Python child then never raises KeyboardInterrupt, so every test that
stops a child with Ctrl-C (the emulation's teardown, `inart run`) waited out its timeout.  A
handler, unlike SIG_IGN, is reset to the default by exec, so children get Ctrl-C again.
"""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.repo import REPO

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def inart_wheel(tmp_path_factory) -> Path:
    """inart as it ships: `python -m build` of the checkout (the sdist, then the wheel built
    from it), once per run for every test that installs it."""
    dist = tmp_path_factory.mktemp("dist")
    build = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                            str(dist), str(REPO)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = dist.glob("inart-*.whl")
    return wheel
