"""Throughput by forecast/probe (Cai et al., Section 3.2), timed only at the receiver.

The sender sends a tiny forecast message, then a probe slice.  The receiver takes the forecast's
arrival as the probe's start and the probe's arrival as its end: s_ij = size / (t_end - t_start).
No clock is shared between hosts.  Estimates per link are averaged over a window (the paper
averages the throughput record), and a node's capability S_i is derived from its links.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable


def probe_rate(size_bytes: int, forecast_arrival: float, probe_arrival: float) -> float:
    """s_ij in bytes/s from two receiver-side timestamps."""
    elapsed = probe_arrival - forecast_arrival
    if size_bytes <= 0:
        raise ValueError(f"size_bytes: expected > 0, got {size_bytes}")
    if elapsed <= 0:
        raise ValueError(f"probe_arrival: expected after forecast_arrival (got {elapsed} s)")
    return size_bytes / elapsed


class ThroughputTable:
    """Link estimates s_ij (windowed mean) and node capabilities for the scheduler.

    Choice (the paper only says link estimates are "a reference" for node capability): probes
    run concurrently on all links, so the rates of the flows into node j add up to what j's
    ingress delivered and those out of j to what its egress sent; both are lower bounds of
    its link rate, so S_j = max(sum_i s_ij, sum_k s_jk).  A node without samples keeps the
    last capability it had (or `default`).
    """

    def __init__(self, nodes: Iterable[str], window: int = 3, default: float = 1.0) -> None:
        self.nodes = list(nodes)
        self.window = window
        self.links: dict[tuple[str, str], deque[float]] = defaultdict(
            lambda: deque(maxlen=window))
        self.capability = dict.fromkeys(self.nodes, default)

    def record(self, src: str, dst: str, rate: float) -> None:
        """One receiver-side measurement of link src -> dst (bytes/s)."""
        if rate <= 0:
            raise ValueError(f"rate: expected > 0, got {rate}")
        self.links[(src, dst)].append(rate)

    def link(self, src: str, dst: str) -> float | None:
        samples = self.links.get((src, dst))
        return sum(samples) / len(samples) if samples else None

    def update_capabilities(self) -> dict[str, float]:
        """S_j = max(sum of mean rates into j, sum out of j); returns the table."""
        for j in self.nodes:
            into = [r for i in self.nodes if i != j and (r := self.link(i, j)) is not None]
            out = [r for k in self.nodes if k != j and (r := self.link(j, k)) is not None]
            if into or out:
                self.capability[j] = max(sum(into), sum(out))
        return dict(self.capability)
