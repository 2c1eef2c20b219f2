"""Plan versions side by side on the same switches: make-before-break with today's P4 program.

A controller that re-plans a running job writes the new plan *beside* the old one, lets the
hosts switch at a round boundary, and only then removes the old entries.  Every key of the
switch tables (p4src/README.md) must therefore differ between the two versions:

- ``ina_aggregate`` (job, ps_addr, worker_addr) and ``result_multicast`` (job, ps_addr,
  dst_addr): each version has its own *wire job id* (and with it its own result address,
  ``Addressing.result_addr``);
- ``route_pair`` (src, dst): the PSs answer on one address per bank, 10.2.x.y in bank A (the
  address the emulation gives them) and the alias 10.6.x.y in bank B, so the (worker, PS) and
  (aggregation address, PS) routes of the two banks never share a key;
- aggregator slots, multicast group ids and replica ids (``result_rewrite``): every (job,
  bank) pair, a *lane*, gets a disjoint range of each.

Jobs side by side must use disjoint workers and PSs (a host trains one job): their
``route_pair`` keys are then disjoint too.

Two banks per job are enough: version n+1 goes into the bank version n does not use, and the
bank of version n-1 is empty by then (a controller waits for it to drain first).  ``route_dst``
(destination-only fallback) depends on the network, not on a plan: ``network_routes`` computes
it once for all hosts and both PS addresses, and it is modified in place when links fail.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import networkx as nx

from control_plane.deploy.addressing import Addressing
from control_plane.deploy.entries import (
    INA_SLOTS,
    Compiled,
    EntriesError,
    SwitchEntries,
    compile_plan,
    host_routes,
)
from control_plane.model.plan import Plan
from control_plane.model.topology import Topology

MAX_JOBS = 4  # jobs installed side by side on one network
BANKS = ("A", "B")
LANES = MAX_JOBS * len(BANKS)
LANE_SLOTS = INA_SLOTS // LANES  # aggregator slots of one (job, bank)
LANE_IDS = (1 << 16) // LANES  # multicast group ids and replica ids of one (job, bank)
FIRST_WIRE_JOB = 16  # wire job ids 16..23: clear of the emulation's job 1
PS_ALIAS_OCTET = 6  # bank B's PS addresses: 10.6.x.y beside 10.2.x.y
ROUTE_DST = "InaIngress.route_dst"


@dataclass(frozen=True)
class Lane:
    """One job's bank: the ranges of ids and slots its entries use on every switch."""

    job_slot: int  # which of the MAX_JOBS places on the network the job holds
    bank: int  # 0 = A, 1 = B

    def __post_init__(self) -> None:
        if not 0 <= self.job_slot < MAX_JOBS:
            raise EntriesError(f"job slot {self.job_slot}: expected 0..{MAX_JOBS - 1}")
        if self.bank not in (0, 1):
            raise EntriesError(f"bank {self.bank}: expected 0 (A) or 1 (B)")

    @property
    def index(self) -> int:
        return self.job_slot * len(BANKS) + self.bank

    @property
    def wire_job(self) -> int:
        """The INA header's job id of this bank's packets."""
        return FIRST_WIRE_JOB + self.index

    @property
    def slot_base(self) -> int:
        return self.index * LANE_SLOTS

    @property
    def id_base(self) -> int:
        return self.index * LANE_IDS

    @property
    def name(self) -> str:
        return f"job slot {self.job_slot} bank {BANKS[self.bank]}"


def ps_address(addressing: Addressing, ps: str, bank: int) -> str:
    """The address a PS answers on in ``bank`` (its own in A, its alias in B)."""
    ip = addressing.ip[ps]
    if bank == 0:
        return ip
    octets = ip.split(".")
    octets[1] = str(PS_ALIAS_OCTET)
    return ".".join(octets)


def bank_addressing(addressing: Addressing, pss: list[str], bank: int) -> Addressing:
    """``addressing`` with the PSs' addresses of ``bank``."""
    return replace(addressing, ip={**addressing.ip,
                                   **{s: ps_address(addressing, s, bank) for s in pss}})


def compile_version(plan: Plan, addressing: Addressing, lane: Lane) -> Compiled:
    """The entries of one plan version in its lane, without ``route_dst`` (network_routes
    owns those).  ``addressing`` is the whole network's, so a job on part of it keeps the
    addresses and ports the hosts and switches really have."""
    versioned = replace(plan, job=lane.wire_job, meta=dict(plan.meta))
    compiled = compile_plan(versioned, bank_addressing(addressing, plan.topology.pss, lane.bank),
                            slots=LANE_SLOTS, slot_base=lane.slot_base, group_base=lane.id_base,
                            rid_base=lane.id_base, with_host_routes=False)
    for swe in compiled.switches.values():
        top = max((rid for g in swe.groups for _, rid in g.replicas), default=0)
        if top >= lane.id_base + LANE_IDS:
            raise EntriesError(f"switch '{swe.switch}': {top - lane.id_base} RESULT replicas "
                               f"do not fit the {LANE_IDS - 1} replica ids of {lane.name}")
    return compiled


def network_routes(topology: Topology, addressing: Addressing,
                   up: nx.Graph | None = None) -> dict[str, SwitchEntries]:
    """``route_dst`` of every worker and PS and of the PSs' bank B aliases, over the links and
    switches of ``up`` (default: all); switches not in ``up`` get nothing."""
    out = host_routes(topology, addressing, up)
    aliases = {f"{ps_address(addressing, s, 1)}/32" for s in topology.pss}
    alias_routes = host_routes(topology, bank_addressing(addressing, topology.pss, 1), up)
    for sw, swe in alias_routes.items():
        out[sw].entries += [e for e in swe.entries if dict(e.match)["dst_addr"] in aliases]
    return out
