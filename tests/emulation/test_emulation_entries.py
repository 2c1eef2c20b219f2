"""The plan -> P4Runtime entries compiler, checked by forwarding packets through its entries.

A tiny model of the switch pipeline's lookups (route_pair, then route_dst; result_multicast +
PRE groups + result_rewrite) walks every flow, stream and RESULT copy through the compiled
entries, so a wrong port, MAC or key shows up as a packet that goes astray.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from control_plane.deploy.addressing import Addressing, AddressingError, assign
from control_plane.deploy.entries import Compiled, EntriesError, compile_plan, pool_size
from control_plane.model.plan import Flow, Plan
from control_plane.model.topologies import build_topology, fig1
from control_plane.model.topology import Link, Node, Topology
from control_plane.solver.solve import solve


def _tables(c: Compiled, sw: str) -> dict:
    out: dict = {}
    for e in c.switches[sw].entries:
        out.setdefault(e.table, {})[e.match] = dict(e.params)
    return out


def walk(c: Compiled, addr: Addressing, start: str, src: str, dst: str) -> list[str]:
    """Nodes a unicast packet visits from switch ``start`` until it leaves to a host."""
    path, here = [start], start
    for _ in range(32):
        t = _tables(c, here)
        hop = t.get("InaIngress.route_pair", {}).get((("src_addr", src), ("dst_addr", dst)))
        if hop is None:
            hop = t.get("InaIngress.route_dst", {}).get((("dst_addr", f"{dst}/32"),))
        assert hop is not None, f"no route at {here} for {src}->{dst}"
        nxt = addr.neighbour_of(here, hop["port"])
        assert hop["dst_mac"] == addr.mac[nxt] and hop["src_mac"] == addr.mac[here]
        path.append(nxt)
        if nxt not in c.switches:
            return path
        here = nxt
    raise AssertionError(f"loop: {path}")


def multicast_copies(c: Compiled, addr: Addressing, ps: str, job: int) -> dict[str, int]:
    """RESULT copies each worker receives when ``ps`` sends one RESULT to the result address."""
    got: dict[str, int] = {}
    frontier = [(addr.tor[ps], c.result_addr)]
    for _ in range(64):
        if not frontier:
            return got
        sw, dst = frontier.pop()
        t = _tables(c, sw)
        key = (("job", job), ("ps_addr", addr.ip[ps]), ("dst_addr", dst))
        group_id = t["InaIngress.result_multicast"][key]["group"]
        group = next(g for g in c.switches[sw].groups if g.group_id == group_id)
        for port, rid in group.replicas:
            rw = t["InaEgress.result_rewrite"][(("egress_rid", rid),)]
            nxt = addr.neighbour_of(sw, port)
            assert rw["dst_mac"] == addr.mac[nxt]
            if nxt in c.switches:
                assert rw["dst_addr"] == c.result_addr
                frontier.append((nxt, rw["dst_addr"]))
            else:
                assert rw["dst_addr"] == addr.ip[nxt]
                got[nxt] = got.get(nxt, 0) + 1
    raise AssertionError("multicast does not terminate")


def check_plan(plan: Plan) -> Compiled:
    addr = assign(plan.topology)
    c = compile_plan(plan, addr)
    topo = plan.topology
    for f in plan.flows:
        src, dst = addr.ip[f.worker], addr.ip[f.ps]
        if f.aggregate_at is None:
            assert walk(c, addr, f.path[1], src, dst) == list(f.path[1:])
            continue
        # the worker's packets reach the aggregating switch along the plan's path
        if len(f.path) > 2:
            assert walk(c, addr, f.path[1], src, dst)[:len(f.path) - 1] == list(f.path[1:])
        # ... where the aggregate continues along the stream path
        stream = walk(c, addr, f.aggregate_at, addr.agg_addr[f.aggregate_at], dst)
        want = plan.stream_path(f.aggregate_at, f.ps)
        if want:
            assert stream == list(want)
        assert stream[-1] == f.ps
        # unaggregated packets of the flow (RETX, collisions) also get to the PS
        assert walk(c, addr, f.aggregate_at, src, dst)[-1] == f.ps
        t = _tables(c, f.aggregate_at)["InaIngress.ina_aggregate"]
        p = t[(("job", plan.job), ("ps_addr", dst), ("worker_addr", src))]
        fan_in = sum(1 for g in plan.flows if (g.ps, g.aggregate_at) == (f.ps, f.aggregate_at))
        assert p["fan_in"] == fan_in and p["rank"] == c.ranks[f.worker]
        assert p["agg_addr"] == addr.agg_addr[f.aggregate_at]
        assert p["pool_size"] == c.pool_size and p["pool_base"] % c.pool_size == 0
    for s in topo.pss:  # every worker gets exactly one copy of every RESULT
        assert multicast_copies(c, addr, s, plan.job) == {w: 1 for w in topo.workers}
        for w in topo.workers:  # and unicast answers (late RESULTs, HELLO replies) arrive
            assert walk(c, addr, addr.tor[s], addr.ip[s], addr.ip[w])[-1] == w
    for sw, entries in c.switches.items():  # pools on one switch never overlap
        ranges = {(p["pool_base"], p["pool_size"]) for e in entries.entries
                  if e.table == "InaIngress.ina_aggregate" for p in [dict(e.params)]}
        spans = sorted(ranges)
        for (b1, s1), (b2, _) in zip(spans, spans[1:], strict=False):
            assert b1 + s1 <= b2, sw
        assert all(b + s <= 4096 for b, s in spans)
    return c


@pytest.mark.parametrize("scheme", ["inart", "atp", "lbmm", "r-inart"])
def test_fig1_plans_forward_aggregate_and_replicate(scheme):
    c = check_plan(solve(fig1(), scheme, 0))
    if scheme == "lbmm":
        assert all(s.summary().get("ina_aggregate", 0) == 0 for s in c.switches.values())
        assert c.pool_size == 4096


def test_fig1_inart_entries_are_the_plans_aggregation():
    """fig1's optimum (2.5, the paper's Fig. 1c) aggregates at both switches; the entries are
    one ina_aggregate per flow aggregated there, in pools sized for the most PSs one switch
    aggregates for (the paper's plan has v2 aggregate for both PSs, ours one PS per switch)."""
    plan = solve(fig1(), "inart", 0)
    assert plan.rate == pytest.approx(2.5)
    c = check_plan(plan)
    summary = {sw: s.summary() for sw, s in c.switches.items()}
    per_switch = {sw: [f for f in plan.flows if f.aggregate_at == sw] for sw in ("v1", "v2")}
    for sw, flows in per_switch.items():
        assert flows and summary[sw]["ina_aggregate"] == len(flows)
    most = max(len({f.ps for f in flows}) for flows in per_switch.values())
    assert c.pool_size == pool_size(most)
    assert c.ranks == {f"w{i}": i - 1 for i in range(1, 7)}


@pytest.mark.parametrize("scheme", ["inart", "atp", "lbmm"])
def test_fattree4_plans(scheme):
    check_plan(solve(build_topology("fattree:4"), scheme, 0))


def test_ranks_follow_natural_order_past_w9():
    topo = build_topology("fattree:4")
    c = compile_plan(solve(topo, "atp", 0), assign(topo))
    assert c.ranks["w10"] == 9 and c.ranks["w2"] == 1


def _line_topology() -> Topology:
    """w1 - a - b - s1 with a side switch c joined to a and b (a detour around b)."""
    nodes = [Node("w1", "worker"), Node("w2", "worker"), Node("s1", "ps", 10),
             Node("a", "switch", 10), Node("b", "switch", 10), Node("c", "switch", 10)]
    pairs = [("w1", "a"), ("w2", "a"), ("a", "b"), ("b", "s1"), ("a", "c"), ("c", "b")]
    links = [Link(x, y, 10) for p, q in pairs for x, y in ((p, q), (q, p))]
    return Topology(nodes, links, "line")


def test_unaggregated_packets_detour_when_the_stream_comes_back():
    topo = _line_topology()
    # aggregate at c, reached through a; the stream c->b->s1 does not revisit a: direct tail
    flows = [Flow("w1", "s1", "c", ("w1", "a", "c")), Flow("w2", "s1", "c", ("w2", "a", "c"))]
    plan = Plan("custom", topo, {"s1": 1.0}, flows, rate=1.0,
                meta={"stream_paths": {"c->s1": ["c", "a", "b", "s1"]}})
    addr = assign(topo)
    c = compile_plan(plan, addr)
    # the stream comes back through a, so w's unaggregated packets go c->b->s1 instead
    assert walk(c, addr, "c", addr.ip["w1"], addr.ip["s1"]) == ["c", "b", "s1"]
    assert walk(c, addr, "c", addr.agg_addr["c"], addr.ip["s1"]) == ["c", "a", "b", "s1"]


def test_bad_paths_are_refused_with_the_flow_named():
    topo = _line_topology()
    flows = [Flow("w1", "s1", None, ("w1", "a", "s1")), Flow("w2", "s1", None, ("w2", "a", "b",
                                                                                 "s1"))]
    plan = Plan("custom", topo, {"s1": 1.0}, flows, rate=1.0)
    with pytest.raises(EntriesError, match=r"flow w1->s1: switch 'a' has no link to 's1'"):
        compile_plan(plan, assign(topo))


def test_addressing_is_deterministic_and_refuses_multihomed_hosts():
    a1, a2 = assign(fig1()), assign(fig1())
    # every address but the P4Runtime ports, which are ports free when assigned
    assert replace(a1, grpc_port={}) == replace(a2, grpc_port={})
    assert assign(fig1(), {"v1": 7001, "v2": 7002}).grpc_address("v2") == "127.0.0.1:7002"
    with pytest.raises(AddressingError, match="switch 'v2': gRPC port None"):
        assign(fig1(), {"v1": 7001})
    assert len(set(a1.ip.values())) == len(a1.ip) == 8
    assert len(set(a1.mac.values())) == len(a1.mac) == 10
    assert a1.grpc_address("v2") != a1.grpc_address("v1")
    assert a1.port[("v1", "v2")] == 1 and a1.neighbour_of("v1", 1) == "v2"
    nodes = [Node("w1", "worker"), Node("s1", "ps", 1), Node("a", "switch", 1),
             Node("b", "switch", 1)]
    pairs = [("w1", "a"), ("w1", "b"), ("a", "s1"), ("b", "s1")]
    topo = Topology(nodes, [Link(x, y, 1) for p, q in pairs for x, y in ((p, q), (q, p))])
    with pytest.raises(AddressingError, match="node 'w1'.*exactly one switch"):
        assign(topo)


def test_addressing_of_another_topology_is_refused():
    plan = solve(fig1(), "lbmm", 0)
    with pytest.raises(EntriesError, match="addressing has no entry"):
        compile_plan(plan, assign(build_topology("fattree:4")))


def test_pool_size():
    assert pool_size(1) == 4096 and pool_size(2) == 2048 and pool_size(3) == 1024
    assert pool_size(4096) == 1
    with pytest.raises(EntriesError, match="4097 aggregation pools"):
        pool_size(4097)


def test_experiment_plots_one_png_per_metric(tmp_path):
    from emulation.experiments.inart_emulation import METRICS, plot

    rows = [{"point": p, "scheme": s, "rate_mbps": 1.0 + i, "comm_s": 2.0 - i / 4,
             "network_mbps": 3.0, "ps_ingress_bytes_per_iter": 1000 * (i + 1)}
            for p in ("lstm", "vgg19") for i, s in enumerate(("inart", "atp", "lbmm"))]
    paths = plot(rows, tmp_path, "models", ["inart", "atp", "lbmm"])
    assert [p.name for p in paths] == [f"models-{k}.png" for k, _ in METRICS]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_comm_ratios_are_printed_beside_the_plans_and_on_a_fat_tree_the_papers():
    from emulation.cli.emulate import comm_ratios

    def rows(topology: str) -> list[dict]:
        return [{"scheme": s, "comm_s": c, "plan_comm_s": p, "topology": topology}
                for s, c, p in (("inart", 1.0, 0.8), ("atp", 2.0, 1.0), ("lbmm", 4.0, 1.6))]

    lines = comm_ratios(rows("fattree:6"))
    assert lines[0] == ("comm time inart/atp = 0.50 (cut 50%); plans: 0.80; "
                        "paper (its fat-tree): 0.51 (cut 49%)")
    assert "inart/lbmm = 0.25" in lines[1] and "paper (its fat-tree): 0.19 (cut 81%)" in lines[1]
    # the paper's figures are its 50-worker fat-tree's: not a fig1's or a leaf-spine's
    for topology in ("leafspine:2,2,3", "fig1"):
        lines = comm_ratios(rows(topology))
        assert lines[1] == "comm time inart/lbmm = 0.25 (cut 75%); plans: 0.50"
        assert not any("paper" in line for line in lines)
