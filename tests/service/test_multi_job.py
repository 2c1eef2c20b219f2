"""Several jobs under one service, planned together (control_plane/solver/multi_job.py): a job
submitted beside a running one re-plans both, their plans fit the network together and each
is valid against the share it was given; a cancel gives the freed capacity back; an event
re-plans them together."""

from __future__ import annotations

import json
import time

import pytest

from control_plane.model.plan import Plan
from control_plane.model.topologies import build_topology, fig1
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.solver.multi_job import check_fits
from tests.service.conftest import FIG1_SWITCHES, Service
from tests.service.helpers import holds, version_items

JOB_A = (["w1", "w2", "w5"], ["s1"])
JOB_B = (["w3", "w4", "w6"], ["s2"])


def active_plans(svc: Service) -> dict[int, Plan]:
    return {j.id: Plan.from_dict(json.loads(svc.client.plan(j.id).plan_json))
            for j in svc.client.jobs()}


def test_a_second_job_replans_the_first_and_both_fit_fig1(service: Service) -> None:
    service.client.register_topology(fig1(), FIG1_SWITCHES)
    a = service.client.submit(*JOB_A, model_size=1e6, name="a")
    alone = service.client.plan(a.id)
    assert alone.rate == pytest.approx(2.0)  # alone, a's plan fills v2 (3 flows at rate 2)
    b = service.client.submit(*JOB_B, model_size=1e6, name="b")
    plans = active_plans(service)
    assert check_fits(plans, fig1()) == []  # together within every capacity
    # b routes around a, so a keeps its version (same entries, same rate) and both run at 2
    assert service.client.plan(a.id).version == 1
    assert {k: p.rate for k, p in plans.items()} == pytest.approx({a.id: 2.0, b.id: 2.0})
    # b's plan is valid against its share: what a uses of v2 is background there
    assert plans[b.id].meta["multi_job"]["jobs"] == 2
    assert plans[b.id].topology.nodes["v2"].background > 0
    for job in (a, b):
        version = service.client.plan(job.id)
        for sw, items in version_items(version, fig1(), job.job_slot).items():
            assert holds(service.installer.state[sw], items)


def leafspine(svc: Service):
    """Seed 4's leaf-spine (4 workers, 2 PSs), where a job of w1-w3 reaches 6.67 alone and
    5.67 beside a job of w4 (which keeps its 12.06)."""
    topo = build_topology("leafspine:2,2,3", ps=2, preset="heterogeneous", seed=4)
    svc.client.register_topology(topo, {sw: f"127.0.0.1:{52000 + i}"
                                        for i, sw in enumerate(topo.switches)})
    return topo


def test_a_cancel_gives_the_other_job_the_whole_network(service: Service) -> None:
    topo = leafspine(service)
    a = service.client.submit(topo.workers[:3], topo.pss[:1], 1e6)
    b = service.client.submit(topo.workers[3:], topo.pss[1:], 1e6)
    shared = service.client.plan(a.id)
    assert check_fits(active_plans(service), topo) == []
    service.client.cancel(b.id)  # a's first version may still drain: then a moves after it
    deadline = time.monotonic() + 10
    while service.client.plan(a.id).version == shared.version:
        assert time.monotonic() < deadline, "job a was not re-planned after the cancel"
        time.sleep(0.05)
    after = service.client.plan(a.id)
    assert after.rate > shared.rate
    plan = Plan.from_dict(json.loads(after.plan_json))
    assert all(lk.background == 0 for lk in plan.topology.links.values())  # nothing held


def test_an_event_replans_both_jobs_together(service: Service) -> None:
    topo = leafspine(service)
    jobs = [service.client.submit(topo.workers[:3], topo.pss[:1], 1e6),
            service.client.submit(topo.workers[3:], topo.pss[1:], 1e6)]
    assert check_fits(active_plans(service), topo) == []
    reply = service.client.event("link-load", link=("l1", "sp1"), value=5.0)
    assert sorted(r.job_id for r in reply.replans) == sorted(j.id for j in jobs)
    assert all(r.outcome != pb.REPLAN_OUTCOME_FAILED for r in reply.replans), reply
    loaded = topo.to_dict()
    for link in loaded["links"]:
        if {link["src"], link["dst"]} == {"l1", "sp1"}:
            link["background"] = 5.0
    assert check_fits(active_plans(service), type(topo).from_dict(loaded)) == []


def test_nothing_is_solved_again_when_nothing_changed(service: Service) -> None:
    service.client.register_topology(fig1(), FIG1_SWITCHES)
    service.client.submit(*JOB_A, model_size=1e6)
    service.client.submit(*JOB_B, model_size=1e6)
    before = {j.id: j.active_version for j in service.client.jobs()}
    reply = service.client.reconcile()  # re-plans every job: none has anything new
    assert reply is not None
    assert {j.id: j.active_version for j in service.client.jobs()} == before
