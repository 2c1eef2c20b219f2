"""The metric families of one INA switch, whatever target it is: the P4 program's event
counters (read directly on the embedded target, over P4Runtime on bmv2 and Tofino) and each
port's packets and bytes.  One builder, so every target exports the same names."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.core import CounterMetricFamily

# the program's events a dashboard plots on their own (p4src/common/constants.p4)
NAMED_EVENTS = {
    "aggregated_out": ("inart_switch_ina_aggregations",
                       "Aggregated packets the switch emitted (one per completed slot)"),
    "absorbed_drop": ("inart_switch_ina_contributions_absorbed",
                      "Worker contributions added into a slot (and dropped)"),
    "duplicate_drop": ("inart_switch_duplicates_dropped",
                       "Contributions dropped because the slot already held them"),
    "overflow_out": ("inart_switch_overflows",
                     "Aggregates emitted with a saturated sum (OVERFLOW set)"),
    "collision": ("inart_switch_slot_collisions",
                  "Packets forwarded unaggregated: their slot held another chunk"),
}


SYS_NET = Path("/sys/class/net")


@dataclass(frozen=True)
class PortCounters:
    """One port's traffic, as the port sees it (rx: into the switch)."""

    interface: str
    rx_packets: int
    rx_bytes: int
    tx_packets: int
    tx_bytes: int


def interface_counters(iface: str) -> PortCounters:
    """The kernel's counters of ``iface`` (zeros when it is gone)."""
    values = []
    for name in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes"):
        try:
            values.append(int((SYS_NET / iface / "statistics" / name).read_text()))
        except (OSError, ValueError):
            values.append(0)
    return PortCounters(iface, *values)


def families(events: Mapping[str, int], ports: Mapping[int, PortCounters],
             target_drops: Mapping[str, int] | None = None) -> Iterator[CounterMetricFamily]:
    """``events``: program event name -> packets counted; ``ports``: port number -> its
    counters; ``target_drops``: frames the target itself lost, by reason (embedded only)."""
    for event, (name, doc) in NAMED_EVENTS.items():
        family = CounterMetricFamily(name, doc)
        family.add_metric([], events.get(event, 0))
        yield family
    every = CounterMetricFamily("inart_switch_program_events",
                                "Every event counter of the P4 program, in packets",
                                labels=["event"])
    for event, n in sorted(events.items()):
        every.add_metric([event], n)
    yield every
    packets = CounterMetricFamily("inart_switch_port_packets", "Packets per port and direction",
                                  labels=["port", "interface", "direction"])
    octets = CounterMetricFamily("inart_switch_port_bytes", "Bytes per port and direction",
                                 labels=["port", "interface", "direction"])
    for port, c in sorted(ports.items()):
        for direction, n, b in (("rx", c.rx_packets, c.rx_bytes),
                                ("tx", c.tx_packets, c.tx_bytes)):
            packets.add_metric([str(port), c.interface, direction], n)
            octets.add_metric([str(port), c.interface, direction], b)
    yield packets
    yield octets
    if target_drops is not None:
        drops = CounterMetricFamily("inart_switch_target_drops",
                                    "Frames the target lost outside the program, by reason",
                                    labels=["reason"])
        for reason, n in sorted(target_drops.items()):
            drops.add_metric([reason], n)
        yield drops
