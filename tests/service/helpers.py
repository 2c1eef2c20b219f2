"""What a switch holds, read from installer state: which wire jobs and which plan's entries."""

from __future__ import annotations

import json

from control_plane.deploy.addressing import assign
from control_plane.deploy.pipeline import pipeline_for
from control_plane.deploy.versions import BANKS, Lane, compile_version
from control_plane.drivers.p4runtime import P4Info
from control_plane.model.plan import Plan
from control_plane.model.topology import Topology
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.switches import Item, ItemCache, Key

INFO = P4Info.load(pipeline_for("embedded").p4info)
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
