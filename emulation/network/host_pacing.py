"""Kernel pacing of INA senders on emulated hosts: one htb class per (worker, PS) stream.

A paced INA stream must keep its rate when the machine is busy, as a TCP flow does: TCP is
paced by the kernel (internal pacing, or fq), so a descheduled sender loses nothing while
its socket holds data; a user-space token bucket (host_stack/ina/pacing.py) sends nothing
while its process waits for a CPU, and on a loaded machine fell to 0.37 of its plan.
Here the worker hands the kernel its whole window (``--pacing kernel``: no user-space
bucket) and the kernel sends it at the stream's rate from the host's egress queue.

Why htb classes, not fq with SO_MAX_PACING_RATE or SO_TXTIME: fq paces per socket (one
rate per socket, while a worker sends to every PS from one socket at a different rate each,
and the PSs' RESULTs come back to that one port), SO_TXTIME stamps each packet (fq or ETF
honour it), and neither qdisc is built into every kernel (this project's emulation machine
has CONFIG_NET_SCH_FQ and CONFIG_NET_SCH_ETF unset); htb is, wherever Mininet shapes links
(TCLink is htb).  So each worker's egress gets, under the class that shapes its link, one
leaf class per PS stream at the stream's rate (rate = ceil: it never borrows), chosen by
a u32 filter on the PS's address and UDP port; everything else (TCP of the collectives,
control traffic) goes to the default leaf at the link's rate.  htb counts whole frames
(Ethernet header included) as the plan's rates do (pacing.FRAME_OVERHEAD).

    root 5: htb default 2
      5:1  the link (rate = ceil = link)
        5:2   default leaf, pfifo 10:
        5:10+ one leaf per stream, pfifo 11:, 12:, ...; u32 dst IP + dport -> 5:1x
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_CLASS = 2
FIRST_STREAM = 0x10  # classid minor of the first stream (hex, like every tc handle)
MTU_QUANTUM = 1514  # htb's per-round quantum: one full frame, whatever the rate


@dataclass(frozen=True)
class Stream:
    """One paced stream: INA packets to ``ip``:``port`` at ``rate_bps`` (whole frames)."""

    ip: str
    port: int
    rate_bps: float

    def __post_init__(self) -> None:
        if not self.rate_bps > 0:
            raise ValueError(f"stream to {self.ip}:{self.port}: rate {self.rate_bps} bit/s, "
                             f"expected > 0")
        if not 0 < self.port < 65536:
            raise ValueError(f"stream to {self.ip}: port {self.port}, expected 1..65535")


def egress_tree(dev: str, link_bps: float, queue: int, streams: list[Stream],
                burst_bytes: int = MTU_QUANTUM) -> list[str]:
    """``tc -batch`` lines that (re)build ``dev``'s egress: the link's class, the default
    leaf and one leaf per stream (none: just the shaped link).  Rates in whole bit/s.

    A stream's bucket holds ``burst_bytes`` (one INA frame, from the emulation), not tc's
    default of at least an MTU: the bucket fills while a stream is idle between rounds, and
    on fattree:6, where the plan loads links to 100%, the default's 8 frames per stream at
    each round's start made the workers send 1.025 of their plan and retransmit (13 resends
    in 3 rounds, none with the user-space bucket, which starts empty: pacing.py)."""
    if not link_bps > 0 or queue < 1:
        raise ValueError(f"{dev}: link rate {link_bps} bit/s and queue {queue}: expected > 0")
    link = max(1, round(link_bps))
    lines = [f"qdisc add dev {dev} root handle 5: htb default {DEFAULT_CLASS:x}",
             f"class add dev {dev} parent 5: classid 5:1 htb rate {link}bit ceil {link}bit "
             f"quantum {MTU_QUANTUM}",
             f"class add dev {dev} parent 5:1 classid 5:{DEFAULT_CLASS:x} htb rate {link}bit "
             f"ceil {link}bit quantum {MTU_QUANTUM}",
             f"qdisc add dev {dev} parent 5:{DEFAULT_CLASS:x} handle 10: pfifo limit {queue}"]
    for i, s in enumerate(streams):
        minor = FIRST_STREAM + i
        rate = max(1, round(s.rate_bps))
        lines += [
            f"class add dev {dev} parent 5:1 classid 5:{minor:x} htb rate {rate}bit "
            f"ceil {rate}bit burst {burst_bytes}b cburst {burst_bytes}b quantum {MTU_QUANTUM}",
            f"qdisc add dev {dev} parent 5:{minor:x} handle {minor + 1:x}: pfifo limit {queue}",
            f"filter add dev {dev} parent 5: protocol ip prio 1 u32 match ip dst {s.ip}/32 "
            f"match ip protocol 17 0xff match ip dport {s.port} 0xffff flowid 5:{minor:x}"]
    return lines


_CLASS = re.compile(r"^class htb 5:([0-9a-f]+) .*?\n\s*Sent (\d+) bytes (\d+) pkt "
                    r"\(dropped (\d+)", re.M)


def stream_counts(tc_stats: str, streams: int) -> dict[str, int]:
    """Bytes, packets and drops the stream classes carried, from ``tc -s class show``
    (the proof that the kernel, not the sender, paced them)."""
    out = {"bytes": 0, "packets": 0, "dropped": 0, "classes": 0}
    for minor, sent, pkts, dropped in _CLASS.findall(tc_stats):
        if FIRST_STREAM <= int(minor, 16) < FIRST_STREAM + streams:
            out["bytes"] += int(sent)
            out["packets"] += int(pkts)
            out["dropped"] += int(dropped)
            out["classes"] += 1
    return out
