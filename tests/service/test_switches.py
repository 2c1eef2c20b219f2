"""The service's sync: desired items computed without P4Runtime messages compare equal to what
a switch returns, and a sync writes exactly the difference, in an order a switch accepts."""

from __future__ import annotations

from control_plane.deploy.addressing import assign
from control_plane.deploy.versions import Lane, compile_version, network_routes
from control_plane.drivers.p4runtime import build_table_entry
from control_plane.model.topologies import build_topology, fig1
from control_plane.service.network import SwitchInfo
from control_plane.service.switches import (
    DELETE,
    INSERT,
    ItemCache,
    MemoryInstaller,
    changes,
    sync,
    table_item,
)
from control_plane.solver.solve import solve
from tests.service.helpers import INFO


def test_items_from_entries_equal_items_of_the_messages_a_switch_returns() -> None:
    topo = build_topology("fattree:4")
    addr = assign(topo)
    compiled = compile_version(solve(topo, "inart"), addr, Lane(1, 1))
    routes = network_routes(topo, addr)
    cache = ItemCache(INFO)
    checked = 0
    for sw in topo.switches:
        for e in compiled.switches[sw].entries + routes[sw].entries:
            fast = cache.item(e)
            te = build_table_entry(INFO, e.table, dict(e.match), e.action, dict(e.params))
            slow = table_item(te)
            assert (fast.key, fast.value) == (slow.key, slow.value), e.describe()
            assert fast.entity(INFO).table_entry == te
            checked += 1
    assert checked > 800


def test_sync_writes_the_difference_groups_before_and_after_entries() -> None:
    topo = fig1()
    addr = assign(topo)
    plan = solve(topo, "inart")
    cache = ItemCache(INFO)
    a = compile_version(plan, addr, Lane(0, 0)).switches["v2"]
    b = compile_version(plan, addr, Lane(0, 1)).switches["v2"]
    want_a, want_b = cache.items([a]), cache.items([b])
    todo = changes(want_b, want_a)
    kinds = [(c.kind, c.item.key[0]) for c in todo]
    assert kinds == sorted(kinds, key=lambda k: (k[0] == DELETE, (k[1] == "group") != (
        k[0] == INSERT)))
    installer, sw = MemoryInstaller(), SwitchInfo("v2", "127.0.0.1:1", 2)
    result, known = sync(installer, sw, want_a, None)
    assert result.pipeline_pushed and result.inserted == len(want_a) and known == want_a
    result, known = sync(installer, sw, {**want_a, **want_b}, known)
    assert (result.inserted, result.deleted) == (len(want_b), 0)
    result, known = sync(installer, sw, want_b, known)
    assert (result.inserted, result.deleted) == (0, len(want_a))
    assert installer.state["v2"] == want_b
    installer.restart("v2")  # the switch lost everything behind the service's back
    result, known = sync(installer, sw, want_a, known)
    assert result.pipeline_pushed and not result.error and installer.state["v2"] == want_a
    installer.down.add("v2")
    result, known = sync(installer, sw, want_b, known)
    assert not result.reachable and "not answering" in result.error and known is None
