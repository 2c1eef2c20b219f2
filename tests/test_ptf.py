"""Runs the PTF packet suites against every target: the embedded target (everywhere, CI
included) and a real bmv2 simple_switch_grpc (where installed); the hand-written suite
(tests/ptf/) and P4Testgen's tests of the v1model program (tests/ptf_testgen/), one after the
other on one switch, whose statement coverage of the program the embedded target measures.

Skips with the reason when root, bmv2 or the ptf tool are missing; otherwise any PTF
failure fails this test with ptf's report.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PTF_DIR = Path(__file__).resolve().parent / "ptf"
sys.path.insert(0, str(PTF_DIR))
import run_ptf  # noqa: E402

from emulation.targets import TargetError, get_target  # noqa: E402
from emulation.targets.embedded import coverage  # noqa: E402
from tests.drivers.bfrt_fake import write_stub_package  # noqa: E402

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


COVERAGE_GOAL = 95.0  # percent of the program's statements both suites run (embedded target)


@pytest.mark.parametrize("target", ["embedded", "bmv2"])
def test_ptf_suite_passes(target, tmp_path):
    reason = _skip_reason(target)
    if reason:
        pytest.skip(reason)
    cov = tmp_path / "coverage.json"
    proc = subprocess.run(
        [sys.executable, str(PTF_DIR / "run_ptf.py"), "--target", target,
         "--keep-logs", str(tmp_path), *(["--coverage", str(cov)] if target == "embedded"
                                         else [])],
        capture_output=True, text=True, timeout=900,
    )
    report = proc.stdout[-6000:] + proc.stderr[-6000:]
    assert proc.returncode == 0, f"PTF suite failed on {target} (logs in {tmp_path}):\n{report}"
    assert "FAIL" not in report, report
    # both suites ran: the hand-written one, then every P4Testgen test (tests/ptf_testgen)
    generated = json.loads((PTF_DIR.parent / "ptf_testgen" / "TESTGEN.json").read_text())
    output = proc.stdout + proc.stderr
    assert len(re.findall(r"^OK$", output, re.M)) == 2, report
    assert f"Ran {generated['tests']} tests" in output, report
    if target == "embedded":  # what of the program the suite ran, measured by the target
        summary = coverage.summary(coverage.merge([json.loads(cov.read_text())]))
        print(coverage.report(summary))
        assert summary["statements"] > 200, summary  # the whole program was compiled in
        assert summary["percent"] >= COVERAGE_GOAL, coverage.report(summary)


def test_target_command_line_is_shared_by_targets():
    cmd = get_target("embedded").command(run_ptf.switch_spec(2, []))
    assert cmd[:3] == [sys.executable, "-m", "emulation.targets.embedded"]
    assert cmd[3:] == ["--no-p4", "--device-id", "0", "-i", "1@sw1", "-i", "2@sw2",
                       "--log-level", "warn", "--", "--grpc-server-addr", "127.0.0.1:9559"]
    with pytest.raises(TargetError, match="target 'tofu': expected one of embedded, bmv2"):
        get_target("tofu")


def _tofino_ports(tmp_path: Path, count: int = run_ptf.NUM_PORTS) -> Path:
    path = tmp_path / "ports.yaml"
    lines = ["schema: inart.ports/1", "ports:"]
    lines += [f"  - {{port: {k}, dev_port: {8 * (k - 1)}, speed: 10G, iface: veth{2 * k - 1}}}"
              for k in range(1, count + 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_ptf_suite_on_tofino(tmp_path):
    """The same suite on a Tofino (model or switch) behind Stratum: needs the user's SDE
    and a running switch ($INART_TOFINO_SWITCH, $INART_TOFINO_PORTS; docs/tofino.md)."""
    switch, ports = os.environ.get("INART_TOFINO_SWITCH"), os.environ.get("INART_TOFINO_PORTS")
    reason = run_ptf.tofino_skip_reason(switch, Path(ports) if ports else None)
    if reason or not os.environ.get("SDE_INSTALL"):
        pytest.skip(reason or "no SDE ($SDE_INSTALL unset)")
    proc = subprocess.run([sys.executable, str(PTF_DIR / "run_ptf.py"), "--target", "tofino",
                           "--keep-logs", str(tmp_path)],
                          capture_output=True, text=True, timeout=1800)
    report = proc.stdout[-6000:] + proc.stderr[-6000:]
    assert proc.returncode == 0, f"PTF suite failed on tofino (logs in {tmp_path}):\n{report}"


def test_tofino_without_a_switch_is_skipped_with_the_reason(capsys, monkeypatch):
    monkeypatch.delenv("INART_TOFINO_SWITCH", raising=False)
    monkeypatch.delenv("SDE_INSTALL", raising=False)
    assert run_ptf.main(["--target", "tofino"]) == run_ptf.SKIPPED
    assert "SKIPPED: no Tofino switch or model to test (no SDE ($SDE_INSTALL unset))" in \
        capsys.readouterr().out


def test_tofino_command_line_uses_the_ports_file(tmp_path):
    cmd = run_ptf.tofino_ptf_command("10.0.0.5:9559", _tofino_ports(tmp_path), 1, ["x.Y"], [],
                                     tmp_path)
    assert cmd[cmd.index("-i") + 1] == "1@veth1"
    assert f"{run_ptf.NUM_PORTS}@veth{2 * run_ptf.NUM_PORTS - 1}" in cmd
    params = cmd[cmd.index("--test-params") + 1]
    assert "grpc_addr='10.0.0.5:9559'" in params and "target='tofino'" in params
    assert "port_map='1:0,2:8," in params and cmd[-1] == "x.Y"
    short = _tofino_ports(tmp_path, 3)
    with pytest.raises(run_ptf.HarnessError, match=r"port\(s\) 4, 5, .* need 'iface'"):
        run_ptf.tofino_ptf_command("a:1", short, 1, [], [], tmp_path)


def test_tofino_over_bfrt_command_line(tmp_path, monkeypatch):
    """--bfrt: the tests get the driver and the ports file (they map ports themselves), and
    front-panel ports without a dev_port are fine; without the SDE the run is skipped."""
    ports = _tofino_ports(tmp_path)
    cmd = run_ptf.tofino_ptf_command("10.0.0.5:50052", ports, 0, [], [], tmp_path, bfrt=True,
                                     push_timeout=600.0)
    params = cmd[cmd.index("--test-params") + 1]
    assert f"driver='bfrt';ports_file='{ports.resolve()}';push_timeout=600.0" in params
    assert "port_map" not in params
    monkeypatch.delenv("SDE_INSTALL", raising=False)
    monkeypatch.delenv("INART_BFRT_GRPC", raising=False)
    reason = run_ptf.tofino_skip_reason("10.0.0.5:50052", ports, bfrt=True)
    assert reason is not None and "$SDE_INSTALL is not set" in reason
    # stubs regenerated from the SDE's proto are enough on a host without the SDE
    write_stub_package(tmp_path / "stubs" / "bfrt_grpc")
    monkeypatch.setenv("INART_BFRT_GRPC", str(tmp_path / "stubs"))
    assert run_ptf.tofino_skip_reason("10.0.0.5:50052", ports, bfrt=True) is None
