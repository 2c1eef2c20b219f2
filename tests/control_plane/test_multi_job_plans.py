"""Joint planning of several jobs on one network (control_plane/solver/multi_job.py): every plan
valid against what its job was given, all loads together within every capacity, and the
fairness rule (same fraction of the alone rate on contended resources)."""

from __future__ import annotations

import pytest

from control_plane.model.plan import Plan
from control_plane.model.topologies import build_topology, fig1
from control_plane.solver.multi_job import (
    MultiJobError,
    check_fits,
    fair_rates,
    job_part,
    plan_jobs,
    spares,
    total_loads,
)
from control_plane.solver.solve import solve


def inart(_name: str, topo) -> Plan:
    return solve(topo, "inart", 0)


def fig1_jobs() -> dict:
    topo = fig1()
    return {"a": job_part(topo, ["w1", "w2", "w5"], ["s1"]),
            "b": job_part(topo, ["w3", "w4", "w6"], ["s2"])}


def assert_valid_and_fitting(joint, network) -> None:
    for name, plan in joint.plans.items():
        again = Plan.from_dict(plan.to_dict())  # the validator, against the job's share
        assert again.rate == pytest.approx(plan.rate), name
        assert plan.evaluate().rate >= plan.rate * (1 - 1e-9)
    assert check_fits(joint.plans, network) == []


def test_fig1_split_in_two_jobs_shares_the_switches_fairly() -> None:
    joint = plan_jobs(fig1_jobs(), inart)
    assert joint.errors == {}
    assert joint.alone == {"a": 2.0, "b": 2.0}  # each alone: PS-bound (4 / 2 arrivals)
    # both alone plans aggregate 3 flows at v2 (C = 6): together each gets half first ...
    assert joint.fair["a"] == pytest.approx(joint.fair["b"])
    assert 0 < joint.fair["a"] < 2.0
    # ... but planned in turn, b routes around a: both reach their alone rate (the PS bound)
    assert {k: p.rate for k, p in joint.plans.items()} == pytest.approx({"a": 2.0, "b": 2.0})
    assert_valid_and_fitting(joint, fig1())
    # alone, each plan would overload a shared resource together
    alone = {k: solve(t, "inart", 0) for k, t in fig1_jobs().items()}
    assert check_fits(alone, fig1()) != []


def test_shares_of_a_resource_sum_to_its_spare() -> None:
    joint = plan_jobs(fig1_jobs(), inart)
    net = spares(fig1())
    given: dict = {}
    for plan in joint.plans.values():
        for res, s in spares(plan.topology).items():
            given[res] = given.get(res, 0.0) + s
    for res in (("switch", "v1"), ("switch", "v2"), ("link", "v1", "v2"), ("link", "v2", "v1")):
        assert given[res] == pytest.approx(net[res])
    # a host's own link is its job's alone, unchanged
    assert spares(joint.plans["a"].topology)[("link", "w1", "v1")] == net[("link", "w1", "v1")]


@pytest.mark.parametrize("spec", ["leafspine:2,2,3", "fattree:4"])
def test_two_jobs_on_a_multipath_fabric_fit_together(spec: str) -> None:
    topo = build_topology(spec, ps=2, preset="heterogeneous", seed=4)
    half = len(topo.workers) // 2
    parts = {"a": job_part(topo, topo.workers[:half], topo.pss[:1]),
             "b": job_part(topo, topo.workers[half:], topo.pss[1:])}
    alone = {k: inart(k, t) for k, t in parts.items()}
    assert check_fits(alone, topo) != []  # planned alone, the two overload a shared resource
    joint = plan_jobs(parts, inart)
    assert sorted(joint.plans) == ["a", "b"] and joint.errors == {}
    assert_valid_and_fitting(joint, topo)


def test_one_job_alone_is_planned_on_the_network_unchanged() -> None:
    topo = fig1()
    joint = plan_jobs({"only": topo}, inart)
    assert joint.plans["only"].rate == pytest.approx(2.5)
    assert joint.plans["only"].topology.to_dict() == topo.to_dict()


def test_a_fixed_plan_is_taken_off_first() -> None:
    jobs = fig1_jobs()
    fixed = {"a": solve(jobs["a"], "inart", 0)}  # job a keeps its alone plan at rate 2
    joint = plan_jobs({"b": jobs["b"]}, inart, fixed=fixed)
    assert check_fits({**fixed, **joint.plans}, fig1()) == []
    assert 0 < joint.plans["b"].rate <= 2.0


def test_a_job_with_no_capacity_left_is_reported_not_planned() -> None:
    jobs = fig1_jobs()
    hog = {"a": solve(jobs["a"], "inart", 0), "b": solve(jobs["b"], "inart", 0)}
    assert total_loads(hog)[("switch", "v2")] >= 6  # the two together fill v2 (C = 6)
    joint = plan_jobs({"c": jobs["b"]}, inart, fixed=hog)
    assert "c" in joint.errors and "c" not in joint.plans


def test_fair_rates_stop_only_the_jobs_on_the_full_resource() -> None:
    loads = {"a": {("link", "x", "y"): 1.0}, "b": {("link", "x", "y"): 1.0,
                                                  ("link", "y", "z"): 1.0},
             "c": {("link", "u", "v"): 1.0}}
    spare = {("link", "x", "y"): 4.0, ("link", "y", "z"): 1.0, ("link", "u", "v"): 1.0}
    rates = fair_rates({"a": 4.0, "b": 4.0, "c": 2.0}, loads, spare)
    # b stops at y->z (t = 1/4); then a takes the rest of x->y; c is bound by its own link
    assert rates == pytest.approx({"a": 3.0, "b": 1.0, "c": 1.0})


def test_bad_jobs_are_refused_naming_the_field() -> None:
    with pytest.raises(MultiJobError, match="workers"):
        job_part(fig1(), ["w1", "s1"], ["s2"])
    with pytest.raises(MultiJobError, match="pss"):
        job_part(fig1(), ["w1"], [])
