"""Switch-name claims: a dead run's interfaces are removed, a live run's are refused.

A veth pair stands in for a switch port (needs root, no Mininet); the claims themselves are
the real abstract sockets, held by a child process to play the other emulation.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from emulation.network.switch_claims import ClaimError, SwitchClaims, interfaces_of

pytestmark = [pytest.mark.root, pytest.mark.skipif(os.geteuid() != 0,
                                                   reason="creating interfaces needs root")]

HOLD = """
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\\0inart-switch-" + sys.argv[1])
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def port():
    """A veth end named like port 1 of switch ``zqsw`` (as a link between switches leaves)."""
    subprocess.run(["ip", "link", "add", "zqsw-eth1", "type", "veth", "peer", "name", "zqpeer"],
                   check=True)
    yield "zqsw"
    subprocess.run(["ip", "link", "del", "zqsw-eth1"], capture_output=True)


def _holder(switch: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, switch], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_unclaimed_interfaces_are_a_dead_runs_and_are_removed(port):
    claims = SwitchClaims([port, "zqsw2"])
    assert claims.acquire() == ["zqsw-eth1"]
    assert interfaces_of(port) == []
    claims.release()


def test_a_live_claim_is_refused_and_nothing_is_touched(port):
    holder = _holder(port)
    try:
        claims = SwitchClaims(["zqsw2", port])
        with pytest.raises(ClaimError, match=r"switch names zqsw are in use .*zqsw-eth1"):
            claims.acquire()
        assert interfaces_of(port) == ["zqsw-eth1"]
        # the refused run gave back what it had claimed: zqsw2 is free again
        other = SwitchClaims(["zqsw2"])
        assert other.acquire() == []
        other.release()
    finally:
        holder.kill()
        holder.wait()


def test_the_kernel_releases_a_killed_holders_claim(port):
    holder = _holder(port)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    claims = SwitchClaims([port])
    assert claims.acquire() == ["zqsw-eth1"]
    claims.release()


def test_two_claims_in_one_process_collide():
    first = SwitchClaims(["zqsw3"])
    first.acquire()
    try:
        with pytest.raises(ClaimError, match="zqsw3"):
            SwitchClaims(["zqsw3"]).acquire()
    finally:
        first.release()
    SwitchClaims(["zqsw3"]).acquire()  # released: free again


def test_a_server_holds_names_until_end_of_input():
    """`python -m emulation.network.switch_claims` (what each server of a cluster run runs):
    holds the names while its input is open, refuses a second holder, releases them at end of
    input."""
    name = f"zc{os.getpid()}"
    cmd = [sys.executable, "-m", "emulation.network.switch_claims", name]
    first = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "held"
        second = subprocess.run(cmd, input="", capture_output=True, text=True, timeout=30)
        assert second.returncode == 1 and f"switch names {name} are in use" in second.stderr
    finally:
        first.stdin.close()
        assert first.wait(timeout=30) == 0
    again = subprocess.run(cmd, input="", capture_output=True, text=True, timeout=30)
    assert again.returncode == 0 and again.stdout.strip() == "held"
