"""Plan versions side by side (control_plane/deploy/versions.py): every lane's entries can sit
on the same switches as every other lane's, and bank B's entries steer packets to the PSs'
bank B addresses."""

from __future__ import annotations

import pytest

from control_plane.deploy.addressing import assign
from control_plane.deploy.entries import INA_SLOTS, compile_plan
from control_plane.deploy.versions import (
    LANE_SLOTS,
    MAX_JOBS,
    ROUTE_DST,
    Lane,
    compile_version,
    network_routes,
    ps_address,
)
from control_plane.model.topologies import build_topology, fig1
from control_plane.solver.paths import arcs
from control_plane.solver.solve import solve


@pytest.fixture(scope="module")
def fattree4():
    topo = build_topology("fattree:4")
    return topo, solve(topo, "inart"), assign(topo)


def test_all_lanes_fit_on_one_switch_without_a_shared_key(fattree4) -> None:
    """Both banks of a job share no key; jobs share none but routes (their hosts differ)."""
    topo, plan, addr = fattree4
    lanes = [Lane(j, b) for j in range(MAX_JOBS) for b in (0, 1)]
    compiled = [compile_version(plan, addr, lane) for lane in lanes]
    for sw in topo.switches:
        keys, groups, rids, slots = set(), set(), set(), []
        for lane, c in zip(lanes, compiled, strict=True):
            for e in c.switches[sw].entries:
                assert e.table != ROUTE_DST
                key = (lane.job_slot if e.table == "InaIngress.route_pair" else 0, e.table,
                       e.match)
                assert key not in keys, f"{lane.name}: {e.describe()}"
                keys.add(key)
                if e.table == "InaIngress.ina_aggregate":
                    p = dict(e.params)
                    assert dict(e.match)["job"] == lane.wire_job
                    lo, hi = p["pool_base"], p["pool_base"] + p["pool_size"]
                    assert lane.slot_base <= lo and hi <= lane.slot_base + LANE_SLOTS
                    slots.append((lo, hi))
            for g in c.switches[sw].groups:
                assert g.group_id not in groups and 0 < g.group_id < 1 << 16
                groups.add(g.group_id)
                for _, rid in g.replicas:
                    assert rid not in rids and 0 < rid < 1 << 16
                    rids.add(rid)
        slots = sorted(set(slots))
        assert all(a[1] <= b[0] for a, b in zip(slots, slots[1:], strict=False))
        assert not slots or slots[-1][1] <= INA_SLOTS


def test_bank_a_of_the_first_lane_is_the_plain_plan_but_its_job_id() -> None:
    topo = fig1()
    plan, addr = solve(topo, "inart"), assign(topo)
    lane = Lane(0, 0)
    plain = compile_plan(plan, addr)
    versioned = compile_version(plan, addr, lane)
    for sw in topo.switches:
        want = [e for e in plain.switches[sw].entries if e.table != ROUTE_DST]
        got = versioned.switches[sw].entries
        assert [(e.table, e.action) for e in got] == [(e.table, e.action) for e in want]
        assert [g.group_id for g in versioned.switches[sw].groups] == \
            [g.group_id for g in plain.switches[sw].groups]
    assert versioned.result_addr == addr.result_addr(lane.wire_job)


def test_bank_b_routes_lead_to_the_ps_alias() -> None:
    topo = fig1()
    plan, addr = solve(topo, "inart"), assign(topo)
    c = compile_version(plan, addr, Lane(1, 1))
    pairs = {(sw, e.match): dict(e.params)["port"] for sw, swe in c.switches.items()
             for e in swe.entries if e.table == "InaIngress.route_pair"}
    for f in plan.flows:
        alias = ps_address(addr, f.ps, 1)
        assert alias.startswith("10.6.") and alias != addr.ip[f.ps]
        for a, b in arcs(f.path):
            if a in topo.switches:
                key = (a, (("src_addr", addr.ip[f.worker]), ("dst_addr", alias)))
                assert pairs[key] == addr.port[(a, b)]
    aggs = [e for swe in c.switches.values() for e in swe.entries
            if e.table == "InaIngress.ina_aggregate"]
    assert aggs and all(dict(e.match)["ps_addr"].startswith("10.6.") for e in aggs)


def test_network_routes_cover_both_ps_addresses_and_avoid_what_is_down(fattree4) -> None:
    topo, _, addr = fattree4
    routes = network_routes(topo, addr)
    dsts = {dict(e.match)["dst_addr"] for e in routes["e1"].entries}
    for s in topo.pss:
        assert {f"{addr.ip[s]}/32", f"{ps_address(addr, s, 1)}/32"} <= dsts
    assert len(dsts) == len(topo.workers) + 2 * len(topo.pss)
    up = topo.graph.copy()
    host = next(h for h in topo.workers if addr.tor[h] == "e1")
    first_hop = {dict(e.params)["port"] for e in routes["c1"].entries
                 if dict(e.match)["dst_addr"] == f"{addr.ip[host]}/32"}
    (port,) = first_hop
    nb = addr.neighbour_of("c1", port)
    up.remove_edge("c1", nb)
    up.remove_node("c4")
    rerouted = network_routes(topo, addr, up)
    assert "c4" not in rerouted
    again = {addr.neighbour_of("c1", dict(e.params)["port"]) for e in rerouted["c1"].entries
             if dict(e.match)["dst_addr"] == f"{addr.ip[host]}/32"}
    assert again and nb not in again
