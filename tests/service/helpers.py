"""What a switch holds, read from installer state or from a real embedded switch: which wire
jobs and which plan's entries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from control_plane.deploy.addressing import assign
from control_plane.deploy.pipeline import pipeline_for
from control_plane.deploy.versions import BANKS, Lane, compile_version
from control_plane.drivers.p4runtime import P4Info, P4RuntimeClient, decode_value
from control_plane.localhost import free_port
from control_plane.model.plan import Plan
from control_plane.model.topology import Topology
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.switches import Item, ItemCache, Key
from emulation.targets import SwitchProcess, SwitchSpec, get_target

PIPELINE = pipeline_for("embedded")
INFO = P4Info.load(PIPELINE.p4info)
JOB_TABLES = {INFO.table(t).preamble.id for t in ("InaIngress.ina_aggregate",
                                                   "InaIngress.result_multicast")}


def wire_jobs(items: dict[Key, Item]) -> set[int]:
    """Wire job ids of the aggregation and multicast entries a switch holds."""
    return {i.key[2][0][2] for i in items.values()  # job is both tables' first field
            if i.key[0] == "table" and i.key[1] in JOB_TABLES}


def version_items(version: pb.PlanVersion, topology: Topology,
                  job_slot: int) -> dict[str, dict[Key, Item]]:
    """The entries a plan version (as GetPlan returns it) puts on every switch."""
    plan = Plan.from_dict(json.loads(version.plan_json))
    compiled = compile_version(plan, assign(topology), Lane(job_slot, BANKS.index(version.bank)))
    cache = ItemCache(INFO)
    return {sw: cache.items([swe]) for sw, swe in compiled.switches.items()}


def holds(have: dict[Key, Item] | None, want: dict[Key, Item]) -> bool:
    """Whether a switch holds every item of ``want``, with the same contents."""
    return have is not None and all(k in have and have[k].value == i.value
                                    for k, i in want.items())


class Switch:
    """One embedded target process that can be restarted on the same address."""

    def __init__(self, device_id: int, log: Path) -> None:
        self.spec = SwitchSpec(device_id, {}, f"127.0.0.1:{free_port()}")
        self.log = log
        self.proc = SwitchProcess(get_target("embedded"), self.spec, log=log).__enter__()

    def restart(self) -> None:
        self.proc.stop()
        self.proc = SwitchProcess(get_target("embedded"), self.spec, log=self.log).__enter__()

    def read(self) -> tuple[dict[str, list], dict[int, list]]:
        """Every entry per table and every multicast group, read by a client of its own."""
        client = P4RuntimeClient(self.spec.grpc, self.spec.device_id)
        try:
            client.use_p4info(PIPELINE.p4info)
            tables = {t: client.read_table_entries(t) for t in (
                "InaIngress.route_pair", "InaIngress.route_dst", "InaIngress.ina_aggregate",
                "InaIngress.result_multicast", "InaEgress.result_rewrite")}
            return tables, client.read_multicast_groups()
        finally:
            client.close()

    def wire_jobs(self) -> set[int]:
        tables, _ = self.read()
        return {decode_value(e.match[0].exact.value)
                for t in ("InaIngress.ina_aggregate", "InaIngress.result_multicast")
                for e in tables[t]}

    def count(self) -> int:
        tables, groups = self.read()
        return sum(len(v) for v in tables.values()) + len(groups)


@contextmanager
def fig1_switches(logs: Path) -> Iterator[dict[str, Switch]]:
    """fig1's v1 and v2 as embedded targets on free loopback ports, stopped on leaving."""
    started: dict[str, Switch] = {}
    try:
        for i, name in enumerate(("v1", "v2"), start=1):
            started[name] = Switch(i, logs / f"{name}.log")
        yield started
    finally:
        for sw in started.values():
            sw.proc.stop()
