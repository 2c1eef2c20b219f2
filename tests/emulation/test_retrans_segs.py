"""RetransSegs read from /proc/net/snmp: this machine's own file, a sample, and bad text."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulation.network.mininet_net import NetworkError, retrans_segs

TCP_FIELDS = ("RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails "
              "EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors")
SAMPLE = ("Ip: Forwarding DefaultTTL\nIp: 1 64\n"
          f"Tcp: {TCP_FIELDS}\nTcp: 1 200 120000 -1 10 5 0 0 2 900 800 37 0 3 0\n"
          "Udp: InDatagrams NoPorts\nUdp: 5 0\n")


def test_sample_and_this_machine():
    assert retrans_segs(SAMPLE) == 37
    assert retrans_segs(Path("/proc/net/snmp").read_text()) >= 0


@pytest.mark.parametrize("text", ["", "Tcp: RtoAlgorithm\nTcp: 1\n", "Udp: a\nUdp: 1\n"])
def test_text_without_the_counter_is_refused(text):
    with pytest.raises(NetworkError, match="RetransSegs"):
        retrans_segs(text)
