"""Runs the one PTF packet suite (tests/ptf/) against every target: the embedded target
(everywhere, CI included) and a real bmv2 simple_switch_grpc (where installed).

Skips with the reason when root, bmv2 or the ptf tool are missing; otherwise any PTF
failure fails this test with ptf's report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PTF_DIR = Path(__file__).resolve().parent / "ptf"
sys.path.insert(0, str(PTF_DIR))
import run_ptf  # noqa: E402

from emulation.targets import TargetError, get_target  # noqa: E402

pytestmark = [pytest.mark.root]


def _skip_reason(target: str) -> str | None:
    if os.geteuid() != 0:
        return "needs root for network namespaces and raw sockets"
    if shutil.which("ip") is None:
        return "iproute2 'ip' not installed"
    unavailable = get_target(target).unavailable()
    if unavailable:
        return unavailable
    if run_ptf.find_ptf() is None:
        return "the ptf tool is not installed (pip install ptf)"
    return None


@pytest.mark.parametrize("target", ["embedded", "bmv2"])
def test_ptf_suite_passes(target, tmp_path):
    reason = _skip_reason(target)
    if reason:
        pytest.skip(reason)
    proc = subprocess.run(
        [sys.executable, str(PTF_DIR / "run_ptf.py"), "--target", target,
         "--keep-logs", str(tmp_path)],
        capture_output=True, text=True, timeout=900,
    )
    report = proc.stdout[-6000:] + proc.stderr[-6000:]
    assert proc.returncode == 0, f"PTF suite failed on {target} (logs in {tmp_path}):\n{report}"
    assert "OK" in report and "FAIL" not in report, report


def test_target_command_line_is_shared_by_targets():
    cmd = get_target("embedded").command(run_ptf.switch_spec(2, []))
    assert cmd[:3] == [sys.executable, "-m", "emulation.targets.embedded"]
    assert cmd[3:] == ["--no-p4", "--device-id", "0", "-i", "1@sw1", "-i", "2@sw2",
                       "--log-level", "warn", "--", "--grpc-server-addr", "127.0.0.1:9559"]
    with pytest.raises(TargetError, match="target 'tofu': expected one of embedded, bmv2"):
        get_target("tofu")
