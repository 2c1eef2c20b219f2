"""A bmv2 or Tofino switch's metrics: the program's event counters read over P4Runtime at
each scrape (a read-only session, no arbitration: the controller in charge is never
disturbed) and its ports' kernel interface counters where they live on this machine (an
emulation's switches).  The embedded target reads its own in place instead
(emulation/targets/embedded/metrics.py); both export control_plane/observe/switch_metrics.py's
names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from control_plane.deploy.counters import read_events
from control_plane.deploy.transaction import SwitchAddress
from control_plane.observe.switch_metrics import families, interface_counters
from control_plane.p4build.sources import event_names

READ_TIMEOUT_S = 2.0  # a scrape must not hang on a switch that stopped answering


class P4RuntimeSwitchCollector(Collector):
    """The metric families of one switch reached over P4Runtime; ``inart_switch_up`` says
    whether its counters could be read this time."""

    def __init__(self, switch: SwitchAddress, p4info: Path, ports: dict[int, str]) -> None:
        self.switch, self.p4info, self.ports = switch, p4info, ports
        self.names = event_names()

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        up = GaugeMetricFamily("inart_switch_up", "1 if the switch's counters were read")
        try:
            events = read_events({self.switch.name: self.switch}, self.p4info, self.names,
                                 READ_TIMEOUT_S)[self.switch.name]
            up.add_metric([], 1.0)
        except Exception:  # noqa: BLE001 - any failure: not readable now, say so
            events = {}
            up.add_metric([], 0.0)
        yield up
        yield from families(events, {n: interface_counters(i) for n, i in self.ports.items()})


def registry_for(switch: SwitchAddress, p4info: Path, ports: dict[int, str]
                 ) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(P4RuntimeSwitchCollector(switch, p4info, ports))
    return registry
