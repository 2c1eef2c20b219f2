import json
import random

import pytest

from control_plane.l_inart import l_inart
from control_plane.lp_model import LPModel
from control_plane.milp import solve_milp
from control_plane.paths import PathSets
from control_plane.plan import Plan, PlanError
from control_plane.solve import solve
from control_plane.topologies import fattree, fig1, leafspine


@pytest.fixture(scope="module")
def fig1_plans():
    t = fig1()
    return {s: solve(t, s, seed=0) for s in ("lbmm", "atp", "r-inart", "inart", "joint", "milp")}


def test_fig1_known_rates(fig1_plans):
    assert fig1_plans["lbmm"].rate == pytest.approx(4 / 3)
    assert fig1_plans["atp"].rate == pytest.approx(2.0)
    assert fig1_plans["r-inart"].rate <= 2.4 + 1e-9
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


def test_fattree4_schemes_valid_and_ordered():
    t = fattree(4)
    plans = {s: solve(t, s, seed=1) for s in ("lbmm", "atp", "r-inart", "inart")}
    assert plans["inart"].rate >= plans["atp"].rate >= plans["lbmm"].rate
    assert plans["inart"].rate > plans["lbmm"].rate
    assert plans["inart"].rate <= plans["inart"].upper_bound + 1e-6
    assert solve(t, "inart", seed=1).to_dict()["flows"] == plans["inart"].to_dict()["flows"]


JOINT_CASES = {
    "fig1": fig1,
    "fattree:4": lambda: fattree(4),
    **{f"leafspine:4,3,3 het {n}": (lambda n=n: leafspine(4, 3, 3, ps=2, preset="heterogeneous",
                                                           seed=n)) for n in (1, 2, 4)},
    "leafspine:3,2,3 het 4": lambda: leafspine(3, 2, 3, ps=2, preset="heterogeneous", seed=4),
}


@pytest.fixture(scope="module")
def joint_vs_inart():
    out = {}
    for name, build in JOINT_CASES.items():
        t = build()
        paths = PathSets(t)
        out[name] = solve(t, "inart", seed=1, paths=paths), solve(t, "joint", seed=1, paths=paths)
    return out


@pytest.mark.parametrize("name", list(JOINT_CASES))
def test_joint_never_below_inart(joint_vs_inart, name):
    inart, joint = joint_vs_inart[name]
    assert joint.rate >= inart.rate * (1 - 1e-9)
    assert joint.rate <= joint.upper_bound + 1e-6
    assert Plan.from_dict(joint.to_dict()).rate == pytest.approx(joint.rate)
    if joint.meta["joint"]["kept"] == "inart":
        assert joint.to_dict()["flows"] == inart.to_dict()["flows"]


def test_joint_beats_inart_on_fattree4_and_heterogeneous_leafspines(joint_vs_inart):
    wins = {name: joint.rate / inart.rate for name, (inart, joint) in joint_vs_inart.items()}
    assert wins["fattree:4"] > 1.01, wins
    assert sum(r > 1.01 for r in wins.values()) >= 4, wins


def small_instance(seed: int):
    rng = random.Random(seed)
    return leafspine(rng.randint(2, 3), rng.randint(1, 2), 2, ps=2,
                     preset=rng.choice(["homogeneous", "heterogeneous"]), seed=seed)


def test_rounding_close_to_exact_on_small_instances():
    ratios = []
    for seed in range(5):
        t = small_instance(seed)
        exact = solve(t, "milp").rate
        ratios.append(solve(t, "inart", seed=seed).rate / exact)
        assert ratios[-1] <= 1 + 1e-6
    assert sum(ratios) / len(ratios) >= 0.8, ratios


@pytest.mark.parametrize("preset", ["homogeneous", "heterogeneous"])
def test_fattree6_inart_beats_atp_by_half(preset):
    t = fattree(6, ps=4, preset=preset, seed=1)
    paths = PathSets(t)
    inart, base = solve(t, "inart", seed=1, paths=paths), solve(t, "atp", paths=paths)
    print(f"fattree:6 {preset}: inart {inart.rate:.3f} atp {base.rate:.3f} "
          f"ratio {inart.rate / base.rate:.2f}; inart/upper_bound "
          f"{inart.rate / inart.upper_bound:.3f}")
    assert len(t.workers) == 50
    assert inart.rate >= 1.5 * base.rate
    assert inart.rate <= inart.upper_bound + 1e-6


def test_impossible_requests_are_clear():
    from control_plane.topology import Topology, TopologyError

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


def test_bench_joint_table_covers_fig1_and_leafspines():
    from control_plane.bench_solver import joint_summary, joint_table

    rows = joint_table([], ["3,2,3"], seeds=1, seed=1)
    assert [r["topology"] for r in rows] == ["fig1", "leafspine:3,2,3 seed 1"]
    assert rows[0]["joint/inart"] == 1.0 and rows[0]["joint_kept"] == "inart"
    summary = joint_summary(rows)
    assert summary["instances"] == summary["joint>=inart"] == 2
    assert summary["joint>inart"] == 1
