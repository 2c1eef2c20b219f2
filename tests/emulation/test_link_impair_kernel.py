"""The link impairment's rules and hold line on real interfaces: two network namespaces
joined by a veth, the sender's egress impaired as an emulated link's end is, UDP datagrams
stamped and numbered across it.  Every frame arrives (no loss asked), about the asked share
twice, and about the asked share late by the hold and overtaken."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from control_plane.repo import child_env
from emulation.network.link_impair import LinkImpairment, egress_rules, hold_names, rule_counts

pytestmark = pytest.mark.root
COUNT = 2000
DELAY_MS = 5.0

SENDER = """
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for seq in range(int(sys.argv[1])):
    s.sendto(struct.pack("!Id", seq, time.time()), ("10.77.0.2", 9000))
    time.sleep(0.0002)
"""
RECEIVER = """
import json, socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.77.0.2", 9000))
s.settimeout(2.0)
print("ready", flush=True)
got = []
try:
    while True:
        data = s.recv(64)
        seq, sent = struct.unpack("!Id", data[:12])
        got.append((seq, time.time() - sent))
except socket.timeout:
    pass
print(json.dumps(got), flush=True)
"""


def ns(name: str, *cmd: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", name, *cmd], capture_output=True, text=True,
                          timeout=30, check=True, **kw)


@pytest.fixture
def pair_of_namespaces():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    for tool in ("nft", "ethtool"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool}")
    tag = uuid.uuid4().hex[:6]
    a, b = f"inart-ta-{tag}", f"inart-tb-{tag}"
    try:
        for name in (a, b):  # no IPv6: its chatter at link-up would be held before the line
            subprocess.run(["ip", "netns", "add", name], check=True, timeout=10)
            ns(name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1")
        subprocess.run(["ip", "link", "add", "ia", "netns", a, "type", "veth", "peer", "name",
                        "ib", "netns", b], check=True, timeout=10)
        for name, intf, ip in ((a, "ia", "10.77.0.1/24"), (b, "ib", "10.77.0.2/24")):
            ns(name, "ip", "addr", "add", ip, "dev", intf)
            ns(name, "ip", "link", "set", intf, "up")
            ns(name, "ip", "link", "set", "lo", "up")
        yield a, b
    finally:
        for name in (a, b):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)


def test_held_frames_arrive_late_and_overtaken_duplicates_twice_none_lost(pair_of_namespaces,
                                                                        tmp_path: Path):
    a, b = pair_of_namespaces
    imp = LinkImpairment(dup=10, reorder=20, delay_ms=DELAY_MS)
    hold, peer = hold_names("ia")
    # checksums complete in the frame, as the emulation's hosts send them (a held frame is
    # sent again as it was read)
    ns(a, "ethtool", "-K", "ia", "tx", "off")
    ns(a, "ip", "link", "add", hold, "type", "veth", "peer", "name", peer)
    for dev in (hold, peer):
        ns(a, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1")
        ns(a, "ip", "link", "set", dev, "up")
    rules = tmp_path / "rules.nft"
    rules.write_text(egress_rules("inart_test", "ia", imp))
    try:
        ns(a, "nft", "-f", str(rules))
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"nftables netdev egress rules refused (kernel < 5.16?): {exc.stderr}")
    env = child_env()
    line = subprocess.Popen(["ip", "netns", "exec", a, sys.executable, "-m",
                             "emulation.network.hold_line",
                             "--delay-ms", str(DELAY_MS), f"{peer}=ia"], stdout=subprocess.PIPE,
                            text=True, env=env)
    receiver = subprocess.Popen(["ip", "netns", "exec", b, sys.executable, "-c", RECEIVER],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert line.stdout.readline().strip() == "ready"
        assert receiver.stdout.readline().strip() == "ready"
        ns(a, sys.executable, "-c", SENDER, str(COUNT))
        got = json.loads(receiver.communicate(timeout=60)[0])
    finally:
        line.terminate()
        receiver.kill()
    counts = json.loads(line.communicate(timeout=10)[0].splitlines()[-1])
    nft = rule_counts(ns(a, "nft", "-j", "list", "table", "netdev", "inart_test").stdout)

    seqs = [seq for seq, _ in got]
    assert set(seqs) == set(range(COUNT))  # nothing lost: every held frame was sent again
    assert counts == {"held": nft["held"], "sent": nft["held"], "send_errors": 0}
    assert nft["dropped"] == 0
    # the counters count every frame: the sender's ARP request or two among them
    assert 0 <= nft["duplicated"] - (len(seqs) - COUNT) <= 3, (len(seqs), nft)
    # shares within ~5 standard deviations of the asked 20% and 10% (of 2000, and of the
    # 1600 frames not held)
    assert 250 <= nft["held"] <= 550, nft
    assert 90 <= nft["duplicated"] <= 230, nft
    late = [delay for _, delay in got if delay >= DELAY_MS / 1000 * 0.95]
    assert abs(len(late) - nft["held"]) <= 0.05 * COUNT, (len(late), nft)
    overtaken = sum(1 for i in range(1, len(seqs)) if seqs[i] < max(seqs[:i]))
    assert overtaken >= nft["held"] // 2, (overtaken, nft)
