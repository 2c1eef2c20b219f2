"""A worker's or a PS's /metrics (``--metrics ADDRESS``): rounds, round time, bytes,
sending rate and retransmissions of a worker; packets in and out and completed rounds of a
PS.  The transport's and the PS's own counters are read at scrape time, so the packet loops
pay nothing for them; only the per-round figures are recorded, once per round."""

from __future__ import annotations

from collections import Counter as Counts
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

# rounds last from milliseconds (loopback) to minutes (a large model at 0.25 Mbit/s per unit)
ROUND_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


def snapshot(read: Callable[[], dict[str, int]]) -> dict[str, int]:
    """A copy of a dict the packet loop may be adding keys to meanwhile (copying then raises
    RuntimeError: read it again)."""
    for _ in range(5):
        try:
            return dict(read())
        except RuntimeError:
            continue
    return {}


class CountsCollector(Collector):
    """``name{event}``: every key of a live ``Counter`` of event counts."""

    def __init__(self, name: str, doc: str, read: Callable[[], Counts[str]]) -> None:
        self.name, self.doc, self.read = name, doc, read

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(self.name, self.doc, labels=["event"])
        for event, n in sorted(snapshot(self.read).items()):
            family.add_metric([event], n)
        yield family


class WorkerMetrics:
    """A worker's registry; ``round`` records each finished round."""

    def __init__(self, transport_counts: Callable[[], Counts[str]]) -> None:
        self.registry = r = CollectorRegistry()
        self.rounds = Counter("inart_worker_rounds", "Rounds this worker finished", registry=r)
        self.round_seconds = Histogram("inart_worker_round_duration_seconds",
                                       "Time of a round's exchange (sync)",
                                       buckets=ROUND_BUCKETS, registry=r)
        self.bytes = Counter("inart_worker_sent_bytes", "Gradient bytes sent", registry=r)
        self.wire_bytes = Counter("inart_worker_wire_bytes",
                                  "Bytes put on the link (frames, headers, ACKs)", registry=r)
        self.rate = Gauge("inart_worker_sending_rate_bits_per_second",
                          "Sending rate of the last round (wire bits over its exchange time)",
                          registry=r)
        self.retx = Counter("inart_worker_retransmissions",
                            "Chunks sent again (timeouts, fast retransmits, probes)",
                            registry=r)
        self._retx_seen = 0
        self.counts = transport_counts
        r.register(CountsCollector("inart_worker_transport_events",
                                   "The INA transport's event counters", transport_counts))

    def round(self, sync_s: float, sent: int, wire: int) -> None:
        self.rounds.inc()
        self.round_seconds.observe(sync_s)
        self.bytes.inc(sent)
        self.wire_bytes.inc(wire)
        if sync_s > 0:
            self.rate.set(wire * 8 / sync_s)
        counts = snapshot(self.counts)
        retx = counts.get("retx_sent", 0) + counts.get("retx_probe", 0)
        self.retx.inc(max(0, retx - self._retx_seen))
        self._retx_seen = retx


def ps_registry(stats: Callable[[], dict[str, int]]) -> CollectorRegistry:
    """A PS's registry over ``stats`` (ps_server.shard_stats: its counters, its aggregator's
    and the rounds its whole shard completed)."""
    registry = CollectorRegistry()
    registry.register(PsCollector(stats))
    return registry


class PsCollector(Collector):
    def __init__(self, stats: Callable[[], dict[str, int]]) -> None:
        self.stats = stats

    def collect(self) -> Iterator[CounterMetricFamily]:
        stats = snapshot(self.stats)
        rounds = CounterMetricFamily("inart_ps_rounds", "Rounds every chunk of the shard completed")
        rounds.add_metric([], stats.pop("rounds_completed", 0))
        grads = CounterMetricFamily("inart_ps_received_packets",
                                    "Gradient packets received, by kind", labels=["kind"])
        grads.add_metric(["first"], stats.get("rx_grad", 0))
        grads.add_metric(["retransmission"], stats.get("rx_retx", 0))
        sent = CounterMetricFamily("inart_ps_sent_packets", "RESULT packets sent")
        sent.add_metric([], stats.get("tx", 0))
        every = CounterMetricFamily("inart_ps_events", "The PS's and its aggregator's counters",
                                    labels=["event"])
        for event, n in sorted(stats.items()):
            every.add_metric([event], n)
        yield from (rounds, grads, sent, every)
