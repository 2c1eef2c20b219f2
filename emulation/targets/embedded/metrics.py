"""The embedded target's /metrics: its program's counter array of events read in place
(under the switch lock, no P4Runtime round trip) and its ports' kernel interface counters,
which count what crossed each veth at no cost to the switch's packet loop."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from control_plane.observe.switch_metrics import families, interface_counters
from control_plane.p4build.sources import event_names
from emulation.targets.embedded.pipeline import Switch

EVENTS_ARRAY = ".events"  # the program's event counter array (InaIngress.events)


class EmbeddedCollector(Collector):
    """The metric families of one running embedded switch."""

    def __init__(self, switch: Switch, lock: threading.Lock, ports: dict[int, str]) -> None:
        self.switch, self.lock, self.ports = switch, lock, ports
        self.names = event_names()

    def collect(self) -> Iterator[CounterMetricFamily]:
        with self.lock:
            program = self.switch.program
            array = next((c for name, c in program.res.counters.items()
                          if name.endswith(EVENTS_ARRAY)), None) if program else None
            packets = list(array.packets) if array else []
            drops = dict(self.switch.drops)
        events = {name: packets[i] for name, i in self.names.items() if i < len(packets)}
        ports = {n: interface_counters(iface) for n, iface in self.ports.items()}
        yield from families(events, ports, drops)


def registry_for(switch: Switch, lock: threading.Lock, ports: dict[int, str]
                 ) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(EmbeddedCollector(switch, lock, ports))
    return registry
