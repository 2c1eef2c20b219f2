import json

import pytest

from control_plane.bench.figures import fattree_figures, line, random_figure
from control_plane.model.plan import Plan, PlanError
from control_plane.model.topologies import fattree, fig1, leafspine
from control_plane.solver.count_lp import CountLP
from control_plane.solver.l_inart import l_inart
from control_plane.solver.lp_inart import InArtLP
from control_plane.solver.lp_model import LPModel
from control_plane.solver.milp import solve_milp
from control_plane.solver.paths import PathSets
from control_plane.solver.solve import route, solve


@pytest.fixture(scope="module")
def fig1_plans():
    t = fig1()
    return {s: solve(t, s, seed=0) for s in ("lbmm", "atp", "r-inart", "inart", "joint", "milp")}


def test_fig1_known_rates(fig1_plans):
    assert fig1_plans["lbmm"].rate == pytest.approx(4 / 3)
    assert fig1_plans["atp"].rate == pytest.approx(2.0)
    assert fig1_plans["r-inart"].rate == pytest.approx(2.4)
    assert fig1_plans["r-inart"].upper_bound == pytest.approx(2.4)  # the count LP is exact
    assert fig1_plans["inart"].rate == pytest.approx(2.5)
    assert fig1_plans["joint"].rate == pytest.approx(2.5)
    assert fig1_plans["milp"].rate == pytest.approx(2.5)


def test_fig1_milp_confirms_equal_split_optimum():
    t = fig1()
    assert solve_milp(t, PathSets(t), {"s1": 0.5, "s2": 0.5}).rate == pytest.approx(2.4)


def test_every_plan_survives_json_and_validation(fig1_plans, tmp_path):
    for name, plan in fig1_plans.items():
        path = tmp_path / f"{name}.json"
        plan.save(path)
        back = Plan.load(path)
        assert back.rate == pytest.approx(plan.rate)
        assert back.evaluate().rate == pytest.approx(plan.rate)
        if plan.upper_bound is not None:
            assert plan.rate <= plan.upper_bound + 1e-6


def test_plan_claiming_too_much_is_rejected(fig1_plans):
    data = fig1_plans["inart"].to_dict()
    data["rate"] = 3.0
    with pytest.raises(PlanError, match="allow at most 2.5"):
        Plan.from_dict(data)


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d.update(schema="x"), "schema"),
    (lambda d: d["partition"].update(s1=0.9), "sum to"),
    (lambda d: d["flows"].pop(), "no flow for"),
    (lambda d: d["flows"][0].update(path=["w1", "v2"]), "no link w1->v2|must run from"),
    (lambda d: d["flows"][0].update(aggregate_at="w2"), "not a switch"),
    (lambda d: d["streams"].pop(), "do not match"),
])
def test_bad_plans_name_the_field(fig1_plans, mutate, message):
    data = json.loads(json.dumps(fig1_plans["inart"].to_dict()))
    mutate(data)
    with pytest.raises(PlanError, match=message):
        Plan.from_dict(data)


def eq2_lp(topo):
    """Eq. 2 in rate variables with every switch and worker explicit (HiGHS)."""
    m = LPModel()
    S, W, V = topo.pss, topo.workers, topo.switches
    g = {s: m.var(cost=1.0) for s in S}
    a = {(s, w, v): m.var() for s in S for w in W for v in V}
    z = {(s, v): m.var() for s in S for v in V}
    for s in S:
        for w in W:
            m.row([(a[(s, w, v)], 1.0) for v in V] + [(g[s], -1.0)], upper=0.0)
            for v in V:
                m.row([(a[(s, w, v)], 1.0), (z[(s, v)], -1.0)], upper=0.0)
        for v in V:
            m.row([(z[(s, v)], 1.0), (g[s], -1.0)], upper=0.0)
        terms = [(g[s], float(len(W)))] + [(a[(s, w, v)], -1.0) for w in W for v in V]
        m.row(terms + [(z[(s, v)], 1.0) for v in V], upper=topo.nodes[s].spare)
    for v in V:
        m.row([(a[(s, w, v)], 1.0) for s in S for w in W], upper=topo.nodes[v].spare)
    return m, g


@pytest.mark.parametrize("topo", [fig1(), fattree(4), leafspine(2, 2, 3, ps=2),
                                  fattree(4, preset="heterogeneous", seed=5)])
def test_l_inart_kkt_matches_lp(topo):
    res = l_inart(topo)
    m, g = eq2_lp(topo)
    sol = m.solve()
    assert res.rate == pytest.approx(sol.objective, rel=1e-6)
    # the KKT split is optimal for Eq. 2: fixing it keeps the LP optimum
    for s, x in res.split.items():
        m.row([(g[s], 1.0)] + [(g[t], -x) for t in topo.pss], 0.0, 0.0)
    assert m.solve().objective == pytest.approx(sol.objective, rel=1e-6)
    assert sum(res.split.values()) == pytest.approx(1.0)


def test_fig1_paper_rounding_keeps_alg2():
    plan = solve(fig1(), "inart", seed=0, rounding="paper")
    assert plan.meta["rounding"] == "random"
    assert plan.rate == pytest.approx(2.5)
    assert plan.rate <= plan.upper_bound + 1e-6


def test_worker_classes_share_paths_after_the_first_hop():
    t = fattree(4, ps=2, preset="heterogeneous", seed=3)
    paths = PathSets(t)
    assert sorted(w for c in paths.classes for w in c.members) == sorted(t.workers)
    for cls in paths.classes:
        tor = t.tor(cls.rep)
        assert cls.single and cls.uplink == min(t.links[(w, tor)].spare for w in cls.members)
        for w in cls.members:
            assert t.tor(w) == tor
            for dst in t.pss + t.switches:
                assert paths.get(w, dst) == tuple(cls.path_for(w, p)
                                                  for p in paths.get(cls.rep, dst))
            for s in t.pss:
                assert paths.switches_between(w, s) == paths.switches_between(cls.rep, s)


SMALL = [(3, 1, 2, 0), (3, 1, 2, 1), (3, 1, 2, 2), (2, 2, 2, 2)]


@pytest.mark.parametrize("leaves,spines,hosts,seed", SMALL)
def test_count_lp_bound_is_valid_and_tight_for_the_equal_split(leaves, spines, hosts, seed):
    t = leafspine(leaves, spines, hosts, ps=2, preset="heterogeneous", seed=seed)
    paths = PathSets(t)
    equal = {s: 0.5 for s in t.pss}
    exact = solve_milp(t, paths, split=equal)
    assert exact.meta["milp_optimal"]
    lp = CountLP(t, paths)
    lp.use_split(equal)
    bound = lp.bound(0.0, l_inart(t).rate).rate
    assert bound >= exact.rate * (1 - 1e-6)  # valid: no plan with the split beats it
    assert lp.feasible_at(bound * (1 + 1e-6)) is None
    r_inart = solve(t, "r-inart", paths=paths)
    assert r_inart.upper_bound == pytest.approx(bound)
    assert r_inart.rate == pytest.approx(exact.rate)  # tight on these, packing reaches it


@pytest.mark.parametrize("leaves,spines,hosts,seed", SMALL)
def test_inart_within_3_percent_of_exact(leaves, spines, hosts, seed):
    t = leafspine(leaves, spines, hosts, ps=2, preset="heterogeneous", seed=seed)
    paths = PathSets(t)
    inart = solve(t, "inart", seed=seed, paths=paths)
    exact = solve_milp(t, paths, start=inart)
    assert exact.meta["milp_optimal"]
    assert 0.97 * exact.rate <= inart.rate <= exact.rate * (1 + 1e-6)
    assert Plan.from_dict(inart.to_dict()).rate == pytest.approx(inart.rate)


def test_count_lp_bound_below_paper_lp_and_above_plan():
    t = fattree(4, ps=4, preset="heterogeneous", seed=2)
    paths = PathSets(t)
    equal = {s: 0.25 for s in t.pss}
    lp = CountLP(t, paths)
    lp.use_split(equal)
    count = lp.bound(0.0, l_inart(t).rate).rate
    paper = InArtLP(t, paths).solve(equal).rate
    plan = solve(t, "r-inart", paths=paths)
    assert plan.rate <= count + 1e-6 <= paper + 2e-6
    assert plan.upper_bound == pytest.approx(count)


def test_fattree4_schemes_valid_ordered_and_deterministic():
    t = fattree(4)
    paths = PathSets(t)
    plans = {s: solve(t, s, seed=1, paths=paths) for s in ("lbmm", "atp", "r-inart", "inart",
                                                           "joint")}
    assert plans["joint"].rate >= plans["inart"].rate >= plans["atp"].rate >= plans["lbmm"].rate
    assert plans["inart"].rate > 1.5 * plans["atp"].rate
    for plan in plans.values():
        assert Plan.from_dict(plan.to_dict()).rate == pytest.approx(plan.rate)
        if plan.upper_bound is not None:
            assert plan.rate <= plan.upper_bound + 1e-6
    again = solve(t, "inart", seed=1, paths=paths)
    assert again.to_dict()["flows"] == plans["inart"].to_dict()["flows"]


def test_random_bench_instances_are_seeded_and_summarised():
    from control_plane.bench.solver import random_instance, random_summary

    spec, topo = random_instance(3)
    assert spec == random_instance(3)[0] and "--seed 2" in spec
    # the printed options rebuild the instance through `inart plan`'s builder call
    import argparse

    from control_plane.cli.plan import add_topology_args
    from control_plane.model.topologies import build_topology, command_seed

    parser = argparse.ArgumentParser()
    add_topology_args(parser)
    args = parser.parse_args(spec.split())
    again = build_topology(args.topology, ps=args.ps, workers=args.workers, preset=args.preset,
                           seed=command_seed(args.seed))
    assert again.to_dict()["links"] == topo.to_dict()["links"]
    assert len(topo.workers) * len(topo.pss) <= 64
    rows = [{"seed": 1, "inart/milp": 1.0, "proven": True, "paper": 8.0, "milp": 10.0},
            {"seed": 2, "inart/milp": 0.9, "proven": False, "paper": 9.0, "milp": 10.0}]
    summary = random_summary(rows)
    assert summary["inart/milp_min"] == 0.9 and summary[">=0.97"] == 1
    assert summary["worst"][0] == (2, 0.9) and summary["milp_proven"] == 1
    fig = random_figure(summary)
    assert fig["value"] == 0.9 and fig["met"] is False and "NOT MET" in line(fig)


def test_bench_skips_joint_where_its_lp_is_too_large():
    from control_plane.bench.solver import skipped

    assert "4080 worker-PS pairs" in skipped("joint", fattree(16, ps=4))
    assert skipped("joint", fattree(8, ps=4)) is None
    assert skipped("lbmm", fattree(16, ps=4)) is None


def test_bench_figures_take_the_worst_ratio_and_the_median_time():
    rows = [{"topology": "fattree:6", "preset": p, "seed": seed, "inart/atp": atp,
             "inart/ub": ub, "inart_e2e_s": wall, "inart_e2e_cpu_s": wall / 2}
            for p, seed, atp, ub, wall in (("homogeneous", 0, 2.1, 0.99, 0.5),
                                          ("heterogeneous", 1, 1.9, 0.95, 3.0),
                                          ("homogeneous", 2, 2.0, 0.89, 0.9))]
    figs = {f["name"]: f for f in fattree_figures(rows)}
    atp = figs["solver.inart/atp[fattree:6]"]
    assert atp["value"] == 1.9 and not atp["met"] and atp["worst"] == "heterogeneous seed 1"
    assert figs["solver.inart/bound[fattree:6]"]["value"] == 0.89
    e2e = figs["solver.e2e[fattree:6]"]
    assert e2e["value"] == 0.9 and e2e["met"] and e2e["cpu_median"] == 0.45
    assert line(e2e).startswith("solver.e2e[fattree:6]") and "ratio 0.900  goal <= 1: met" \
        in line(e2e)
    assert "issue" not in line(e2e).lower()


def test_impossible_requests_are_clear():
    from control_plane.model.topology import Topology, TopologyError

    data = fig1().to_dict()
    for node in data["nodes"]:
        if node["kind"] == "ps":
            node["background"] = node["capacity"]
    with pytest.raises(TopologyError, match="zero spare capacity"):
        solve(Topology.from_dict(data), "inart")
    with pytest.raises(ValueError, match="small instances"):
        solve(fattree(6), "milp")
    with pytest.raises(ValueError, match="rounding"):
        solve(fig1(), "inart", rounding="magic")


def test_large_instances_are_packed_without_the_lp(monkeypatch):
    import control_plane.solver.solve as solve_module

    monkeypatch.setattr(solve_module, "LP_MAX_FLOWS", 0)
    t = fattree(4, ps=2, preset="heterogeneous", seed=1)
    plan = solve(t, "inart", seed=1)
    uplink = min(t.links[(w, t.tor(w))].spare for w in t.workers)
    # 14 workers, switches of room 9: a PS takes >= 5 streams of g <= 3, so f <= 6
    assert plan.upper_bound == pytest.approx(min(l_inart(t).rate, uplink, 6.0))
    assert 0 < plan.rate <= plan.upper_bound
    assert Plan.from_dict(plan.to_dict()).rate == pytest.approx(plan.rate)
    assert plan.rate > solve(t, "atp").rate


def test_route_keeps_the_split_it_is_given():
    split = {"s1": 7 / 15, "s2": 8 / 15}
    plan = route(fig1(), split)
    assert plan.partition == split and plan.rate == pytest.approx(2.5)
    assert plan.rate <= plan.upper_bound + 1e-9
    equal = route(fig1(), {"s1": 0.5, "s2": 0.5}, scheme="r-inart")
    assert equal.scheme == "r-inart" and equal.rate == pytest.approx(2.4)


@pytest.mark.parametrize("split,message", [
    ({"s1": 1.0}, "split: keys"),
    ({"s1": 0.5, "s3": 0.5}, "split: keys"),
    ({"s1": 0.7, "s2": 0.7}, "sum to 1"),
    ({"s1": -0.5, "s2": 1.5}, r"in \[0, 1\]"),
])
def test_route_refuses_a_bad_split_by_name(split, message):
    with pytest.raises(ValueError, match=message):
        route(fig1(), split)


def test_lp_matrix_compression_matches_scipy():
    import numpy as np
    import scipy.sparse as sp

    from control_plane.solver.lp_model import _csc

    rng = np.random.default_rng(1)
    rows, cols = rng.integers(0, 7, 60).tolist(), rng.integers(0, 9, 60).tolist()
    cols = [c for c in cols if c != 4]  # an empty column
    rows = rows[:len(cols)]
    vals = rng.normal(size=len(cols)).tolist()
    start, index, value = _csc(rows, cols, vals, 10)
    want = sp.csc_matrix((vals, (rows, cols)), shape=(7, 10))
    want.sum_duplicates()
    assert start.tolist() == want.indptr.tolist() and index.tolist() == want.indices.tolist()
    assert np.allclose(value, want.data)


# (shape, seed, exact optimum proven by the MILP over minimum-hop paths): instances of
# `inart bench solver --random` where inart over the same paths fell under 0.97 of it: the
# split search missed a 3/7-like split (coarse grid) or the packing missed a plan its
# split's bound promised (MILP polish).  inart now plans small irregular graphs over every
# simple path (test_solver_paths.py), above these optima; here it keeps minimum-hop paths
FORMERLY_SHORT = [("irregular", 57, 7.8333), ("irregular", 52, 7.5), ("leafspine", 3, 9.3512),
                  ("leafspine", 18, 15.291)]


@pytest.mark.parametrize("shape,seed,optimum", FORMERLY_SHORT)
def test_formerly_short_random_instances_reach_97_percent_of_exact(shape, seed, optimum):
    from control_plane.bench.solver import random_instance

    _, t = random_instance(seed, shape)
    inart = solve(t, "inart", seed=seed, paths=PathSets(t))
    assert 0.97 * optimum <= inart.rate <= optimum * (1 + 1e-4)
    assert inart.rate <= inart.upper_bound * (1 + 1e-6)  # the bound for its own split


@pytest.mark.parametrize("shape", ["leafspine", "irregular", "fattree"])
def test_inart_near_exact_on_a_handful_of_each_random_shape(shape):
    from control_plane.bench.solver import random_instance

    for seed in (1, 2, 5):
        _, t = random_instance(seed, shape)
        paths = PathSets(t)
        inart = solve(t, "inart", seed=seed, paths=paths)
        # the MILP starts from inart's plan: its incumbent is never below inart's rate
        exact = solve_milp(t, paths, start=inart, time_limit=5)
        assert inart.rate >= 0.97 * exact.rate, (shape, seed, inart.rate, exact.rate)


def test_milp_polish_is_recorded_and_bounded(monkeypatch):
    from control_plane.bench.solver import random_instance
    from control_plane.solver import solve as solve_mod

    _, t = random_instance(52, "irregular")
    paths = PathSets(t)
    plan = solve(t, "inart", seed=52, paths=paths)
    polish = plan.meta["milp_polish"]
    assert polish["kept"] and polish["from"] < plan.rate and polish["seconds"] >= 0
    monkeypatch.setattr(solve_mod, "POLISH_GAP", 1.0)  # off: the packing alone falls short
    assert solve(t, "inart", seed=52, paths=paths).rate < 0.97 * plan.rate


def test_streams_keep_to_the_bitmap_fan_in():
    # a switch with room for all 70 workers: one stream would carry 70 ranks, more than
    # the INA bitmap holds; the plan aggregates 64 and sends the other 6 directly
    from control_plane.model.plan import MAX_FAN_IN
    from control_plane.model.topology import Link, Node, Topology

    nodes = [Node("v1", "switch", 1000.0), Node("s1", "ps", 10.0)]
    nodes += [Node(f"w{i}", "worker") for i in range(1, 71)]
    links = []
    for a in ["s1"] + [f"w{i}" for i in range(1, 71)]:
        links += [Link(a, "v1", 100.0), Link("v1", a, 100.0)]
    t = Topology(nodes, links)
    plan = solve(t, "inart")
    assert max(st.fan_in for st in plan.streams) == MAX_FAN_IN
    assert plan.rate == pytest.approx(10 / 7)
    assert plan.upper_bound == pytest.approx(10 / 7, rel=1e-2)


def test_bench_plan_scale_times_a_fresh_plan_process_against_the_goals():
    from control_plane.bench.figures import scale_figures
    from control_plane.bench.solver import plan_scale

    row = plan_scale(4, "atp", timeout=300)
    assert row["rc"] == 0 and row["rate"] > 0 and 0 < row["rate/bound"] <= 1
    assert 0.01 < row["peak_gb"] < 2 and row["wall_s"] > 0
    figs = {f["name"]: f for f in scale_figures([row, {**row, "scheme": "lbmm",
                                                      "wall_s": 1000.0, "peak_gb": 9.0}])}
    assert figs["solver.plan_wall[fattree:4 atp]"]["met"]
    assert figs["solver.plan_peak[fattree:4 atp]"]["goal"] == "<= 8"
    assert not figs["solver.plan_wall[fattree:4 lbmm]"]["met"]
    assert not figs["solver.plan_peak[fattree:4 lbmm]"]["met"]
    assert "NOT MET" in line(figs["solver.plan_peak[fattree:4 lbmm]"])


def test_fan_in_bound_caps_large_fattrees():
    # a stream takes at most 64 ranks and floor(9 / g) at a switch of capacity 9: on
    # fattree:32 each PS needs >= 128 units of g <= 9/61, where Eq. 2 allows 1.417
    from control_plane.solver.solve import _fan_in_bound, any_plan_bound

    t = fattree(32)
    assert _fan_in_bound(t) == pytest.approx(4 * 9 / 61, rel=1e-6)
    assert l_inart(t).rate > 1.4 and any_plan_bound(t) == pytest.approx(4 * 9 / 61)
    assert _fan_in_bound(fattree(16)) == pytest.approx(4 * 9 / 22, rel=1e-6)


@pytest.mark.parametrize("shape,seed", [("leafspine", 3), ("irregular", 52), ("fattree", 2)])
def test_fan_in_bound_holds_for_the_exact_optimum(shape, seed):
    from control_plane.bench.solver import random_instance
    from control_plane.solver.solve import _fan_in_bound

    _, t = random_instance(seed, shape)
    exact = solve_milp(t, PathSets(t), time_limit=20)
    assert exact.rate <= _fan_in_bound(t)
