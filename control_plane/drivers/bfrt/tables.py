"""The P4Runtime client's entry, group and counter calls, over BF Runtime.

The PTF suite (tests/ptf) writes its entries with ``insert_table_entry`` /
``insert_multicast_group`` and reads ``read_counters``; this class gives those calls to a test
that drives bf_switchd directly, with the same P4Info names (bfrt.json has them under
``pipe.``) and the same values, translated by the BF Runtime driver's own entity builders.
``open_tables`` pushes the TNA program and brings the ports of a ports file up, as
`inart install --bfrt` does, so every test starts from empty tables and counters.
Counters are read from the hardware (the ``from_hw`` read flag, as the SDE's own client reads
by default): without it bf_switchd answers the values of its last sync, which lag the
packets a test just sent.
"""

from __future__ import annotations

from collections.abc import Mapping

from control_plane.drivers.bfrt.client import DEFAULT_PUSH_TIMEOUT_S, BfrtClient
from control_plane.drivers.bfrt.entities import multicast_entries, table_entry
from control_plane.drivers.bfrt.info import BfrtInfo
from control_plane.drivers.bfrt.install import (
    BfrtSwitch,
    _Run,
    configure_ports,
    program_of,
    resolve_dev_ports,
)
from control_plane.drivers.bfrt.sde import BfrtStubs, load_stubs
from control_plane.drivers.p4runtime.entities import CounterValue
from control_plane.drivers.tofino.stratum import P4_NAME, TofinoFiles

COUNTER_INDEX, COUNTER_PKTS, COUNTER_BYTES = ("$COUNTER_INDEX", "$COUNTER_SPEC_PKTS",
                                              "$COUNTER_SPEC_BYTES")


class BfrtTables:
    """Entries, multicast groups and counters of the program bf_switchd runs."""

    def __init__(self, client: BfrtClient, info: BfrtInfo) -> None:
        self.client, self.info = client, info

    def insert_table_entry(self, table: str, match: Mapping, action: str,
                           params: Mapping | None = None) -> None:
        te = table_entry(self.client.pb2, self.info, table, dict(match), action,
                         dict(params or {}))
        self.client.write(self.client.pb2.Update.INSERT, [te], P4_NAME, f"{table} entry")

    def insert_multicast_group(self, group_id: int, replicas: list[tuple[int, int]]) -> None:
        """Replicas are (port, replica id), as for the P4Runtime client."""
        entries = multicast_entries(self.client.pb2, self.info, group_id, list(replicas))
        self.client.write(self.client.pb2.Update.INSERT, entries, P4_NAME,
                          f"multicast group {group_id}")

    def read_counters(self, counter: str) -> dict[int, CounterValue]:
        """Every cell of an indexed counter, by index."""
        table = self.info.table(counter)
        key_id = table.key(COUNTER_INDEX).id
        pkts, octets = table.datum(COUNTER_PKTS).id, table.datum(COUNTER_BYTES).id
        out = {}
        for te in self.client.read([self.client.pb2.TableEntry(table_id=table.id)], P4_NAME,
                                   f"counter {counter}", from_hw=True):
            index = next(int.from_bytes(kf.exact.value, "big") for kf in te.key.fields
                         if kf.field_id == key_id)
            data = {f.field_id: int.from_bytes(f.stream, "big") for f in te.data.fields}
            out[index] = CounterValue(data.get(pkts, 0), data.get(octets, 0))
        return out

    def read_counter(self, counter: str, index: int) -> CounterValue:
        return self.read_counters(counter).get(index, CounterValue(0, 0))

    def close(self) -> None:
        self.client.close()


def open_tables(switch: BfrtSwitch, files: TofinoFiles, stubs: BfrtStubs | None = None,
                timeout: float = 30.0, push_timeout: float = DEFAULT_PUSH_TIMEOUT_S
                ) -> tuple[BfrtTables, dict[int, int]]:
    """Connect, push the program (empty tables, registers, counters), bring the ports file's
    ports up; the tables and the plan port -> dev port map."""
    client = BfrtClient(stubs or load_stubs(), switch.address, switch.device_id,
                        timeout=timeout, push_timeout=push_timeout).connect()
    try:
        program = program_of(files)
        client.push(program)
        non_p4 = client.get_config().non_p4_config.bfruntime_info
        run = _Run(switch, client, BfrtInfo.from_bytes(program.bfrt_json, non_p4))
        client.info = run.info
        dev_ports = resolve_dev_ports(run)
        configure_ports(run, dev_ports)
        assert run.info is not None
        return BfrtTables(client, run.info), dev_ports
    except BaseException:
        client.close()
        raise
