"""Plans over every simple path must stay installable: a flow aggregated at v must leave its
unaggregated packets a route from v to its PS that does not revisit a switch of its path
(control_plane/model/unaggregated.py), or the deploy layer cannot install the plan."""

import pytest

from control_plane.bench.solver import random_instance
from control_plane.deploy.addressing import assign
from control_plane.deploy.entries import compile_plan
from control_plane.model.plan import Flow, Plan, PlanError
from control_plane.model.topologies import fattree, fig1
from control_plane.model.topology import Topology
from control_plane.model.unaggregated import unaggregated_tail
from control_plane.solver.paths import PathSets, exact_paths
from control_plane.solver.solve import route, solve


def fig1_without(host: str) -> Topology:
    """fig1 with one host cut off (what the controller plans on after its link failed)."""
    t = fig1()
    return Topology([n for n in t.nodes.values() if n.id != host],
                    [lk for lk in t.links.values() if host not in (lk.src, lk.dst)],
                    name=t.name)


def _installs(plan: Plan) -> None:
    compile_plan(plan, assign(plan.topology))  # raises EntriesError if it cannot


def test_a_detour_that_cuts_the_switch_off_its_ps_is_not_a_segment():
    t = fig1()
    paths = exact_paths(t)
    # w5 reaches v1 only through v2, and every path from v1 to a PS crosses v2 again
    assert paths.segments("w5", "v1", "s2") == ()
    assert "v1" not in paths.switches_between("w5", "s2")
    assert paths.switches_between("w1", "s2") == ["v1", "v2"]
    assert paths.segments("w1", "v1", "s2") == (("w1", "v1"),)
    assert unaggregated_tail(t, ("w5", "v2", "v1"), "s2") is None
    assert unaggregated_tail(t, ("w1", "v1"), "s2", [("v1", "v2", "s2")]) == ("v1", "v2", "s2")


def test_the_validator_names_the_flow_and_field_of_an_uninstallable_plan():
    t = fig1()
    flows = [Flow(w, s, None, (w, *(("v1", "v2") if w <= "w4" else ("v2",)), s))
             for s in t.pss for w in t.workers]
    i = flows.index(Flow("w5", "s2", None, ("w5", "v2", "s2")))
    flows[i] = Flow("w5", "s2", "v1", ("w5", "v2", "v1"))
    plan = Plan("inart", t, {"s1": 0.5, "s2": 0.5}, flows,
                meta={"stream_paths": {"v1->s2": ["v1", "v2", "s2"]}})
    want = rf"plan flows\[{i}\] \(w5->s2\) 'path': \['w5', 'v2', 'v1'\] to its 'aggregate_at' v1"
    with pytest.raises(PlanError, match=want):
        plan.finalize()
    with pytest.raises(PlanError, match=want):  # a plan file is refused when it is read
        Plan.from_dict(plan.to_dict())


# the service's re-plan after fig1's link w1-v1 failed: inart's split kept, w1 cut off
# (it routed w5 to v1 through v2 for s2, which the deploy layer refused)
def test_fig1_replanned_without_a_worker_installs():
    split = solve(fig1(), "inart").partition
    t = fig1_without("w1")
    for scheme in ("inart", "r-inart"):
        _installs(route(t, split, scheme))
        _installs(solve(t, scheme))


INSTANCES = [("fig1", 0), ("fattree", 0), ("irregular", 0), ("irregular", 3),
             ("irregular", 5), ("leafspine", 1)]


@pytest.mark.parametrize("shape,seed", INSTANCES)
@pytest.mark.parametrize("scheme", ["inart", "r-inart"])
def test_inart_plans_install(shape, seed, scheme):
    if shape == "fig1":
        t = fig1()
    elif shape == "fattree":
        t = fattree(4)
    else:
        t = random_instance(seed, shape)[1]
    _installs(solve(t, scheme, seed=seed))


@pytest.mark.parametrize("shape,seed", [("fattree", 0), ("leafspine", 2), ("irregular", 1)])
def test_minimum_hop_segments_need_no_search(shape, seed):
    # `segments` and `switches_between` skip the search over minimum-hop paths: check that
    # the search would keep every one of them
    t = fattree(4, ps=2) if shape == "fattree" else random_instance(seed, shape)[1]
    paths = PathSets(t)
    for w in t.workers:
        for s in t.pss:
            for v in paths.switches_between(w, s):
                assert paths.segments(w, v, s) == paths.get(w, v)
                assert all(unaggregated_tail(t, p, s) is not None for p in paths.get(w, v))
