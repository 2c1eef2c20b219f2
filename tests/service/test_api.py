"""The controller service over a real gRPC server on loopback, switches held in memory:
jobs, plan versions installed make-before-break, events, the hosts' round protocol, reconcile
and recovery after a restart."""

from __future__ import annotations

import json
import threading
import time

import grpc
import pytest

from control_plane.model.plan import Plan
from control_plane.model.topologies import build_topology, fig1
from control_plane.service.proto import inart_controller_pb2 as pb
from tests.service.conftest import FIG1_SWITCHES, Service, start_service
from tests.service.helpers import holds, version_items, wire_jobs

WORKERS = [f"w{i}" for i in range(1, 7)]


def fig1_job(svc: Service) -> pb.Job:
    svc.client.register_topology(fig1(), FIG1_SWITCHES)
    return svc.client.submit(model_size=1e6, name="fig1")


def report(svc: Service, job: int, workers: list[str], round_: int) -> list[pb.PlanVersion]:
    return [svc.client.progress(job, w, round_) for w in workers]


def code_of(call) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()


def wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_register_submit_and_get_the_installed_plan(service: Service) -> None:
    state = service.client.register_topology(fig1(), FIG1_SWITCHES)
    assert [(s.name, s.address, s.device_id, s.reachable) for s in state.switches] == [
        ("v1", "127.0.0.1:50901", 1, True), ("v2", "127.0.0.1:50902", 2, True)]
    job = service.client.submit(model_size=1e6, name="demo")
    assert job.state == pb.JOB_STATE_RUNNING and job.active_version == 1
    assert list(job.workers) == WORKERS and list(job.pss) == ["s1", "s2"]
    v = service.client.plan(job.id)
    assert (v.version, v.bank, v.wire_job, v.phase) == (1, "A", 16, 1)
    assert v.state == pb.VERSION_STATE_ACTIVE and v.rate == pytest.approx(2.5)
    plan = Plan.from_dict(json.loads(v.plan_json))
    assert plan.rate == pytest.approx(v.rate)
    assert v.addresses["s1"] == "10.2.0.2" and v.addresses["w1"] == "10.1.0.2"
    assert dict(v.ranks) == {w: i for i, w in enumerate(WORKERS)}
    assert v.result_address == "10.4.0.18" and v.pool_size > 0
    for sw, want in version_items(v, fig1(), job.job_slot).items():
        assert holds(service.installer.state[sw], want)
        assert wire_jobs(service.installer.state[sw]) == {16}
    assert [j.id for j in service.client.jobs()] == [job.id]


def test_link_down_installs_the_next_version_beside_the_old_until_hosts_moved(
        tmp_path) -> None:
    svc = start_service(tmp_path / "s", drain_seconds=3600)
    try:
        job = fig1_job(svc)
        assert {v.version for v in report(svc, job.id, WORKERS, 5)} == {1}
        reply = svc.client.event("link-down", link=("w1", "v1"))
        (r,) = reply.replans
        assert r.outcome == pb.REPLAN_OUTCOME_NEW_VERSION and r.version == 2 and r.phase == 2
        v2 = svc.client.plan(job.id)
        assert (v2.bank, v2.wire_job, v2.switch_round) == ("B", 17, 6)
        assert "w1" not in v2.workers and v2.addresses["s1"] == "10.6.0.2"
        assert svc.client.jobs()[0].state == pb.JOB_STATE_DEGRADED
        old = svc.client.plan(job.id, 1)
        assert old.state == pb.VERSION_STATE_DRAINING
        for sw in FIG1_SWITCHES:  # make: both banks installed
            assert wire_jobs(svc.installer.state[sw]) == {16, 17}
            assert holds(svc.installer.state[sw], version_items(v2, fig1(), 0)[sw])
            assert holds(svc.installer.state[sw], version_items(old, fig1(), 0)[sw])
        # rounds before the switch round stay on version 1, later ones use version 2
        assert svc.client.progress(job.id, "w2", 5).version == 1
        assert svc.client.progress(job.id, "w2", 6).version == 2
        report(svc, job.id, ["w3", "w4", "w5"], 6)
        assert svc.client.plan(job.id, 1).state == pb.VERSION_STATE_DRAINING  # w6 is behind
        report(svc, job.id, ["w6"], 6)
        assert svc.client.plan(job.id, 1).state == pb.VERSION_STATE_RETIRED  # break
        for sw in FIG1_SWITCHES:
            assert wire_jobs(svc.installer.state[sw]) == {17}
        with pytest.raises(grpc.RpcError) as info:
            svc.client.progress(job.id, "w2", 5)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        svc.stop()


def test_an_event_while_a_version_drains_is_applied_once_it_drained(tmp_path) -> None:
    svc = start_service(tmp_path / "s", drain_seconds=3600)
    try:
        job = fig1_job(svc)
        report(svc, job.id, WORKERS, 0)
        assert svc.client.event("link-down", link=("w1", "v1")).replans[0].version == 2
        (r,) = svc.client.event("link-up", link=("w1", "v1")).replans
        assert r.outcome == pb.REPLAN_OUTCOME_DEFERRED
        assert svc.client.jobs()[0].active_version == 2
        report(svc, job.id, WORKERS[1:], 1)  # everyone on version 2: it drains, then v3
        v3 = svc.client.plan(job.id)
        assert (v3.version, v3.bank, v3.switch_round) == (3, "A", 2)
        assert "w1" in v3.workers and v3.rate == pytest.approx(2.5)
        assert svc.client.jobs()[0].state == pb.JOB_STATE_RUNNING
        for sw in FIG1_SWITCHES:
            assert wire_jobs(svc.installer.state[sw]) == {16, 17}  # v3 in A, v2 draining
    finally:
        svc.stop()


def test_old_versions_drain_after_a_while_when_no_host_reports(service: Service) -> None:
    job = fig1_job(service)
    service.client.event("link-load", link=("v1", "v2"), value=5.0)
    wait_for(lambda: service.client.jobs()[0].draining_version == 0)
    active = service.client.plan(job.id)
    assert active.version == 2 and active.rate < 2.5
    for sw in FIG1_SWITCHES:
        assert wire_jobs(service.installer.state[sw]) == {16 + active.version - 1}


def test_a_slowed_ps_reruns_phase_one(service: Service) -> None:
    job = fig1_job(service)
    (r,) = service.client.event("ps-load", node="s1", value=3.0).replans
    assert r.outcome == pb.REPLAN_OUTCOME_NEW_VERSION and r.phase == 1
    v = service.client.plan(job.id)
    assert v.partition["s1"] < v.partition["s2"]
    (r,) = service.client.event("link-load", link=("w5", "v2"), value=1.0).replans
    assert r.phase in (0, 2)  # the split stays: phase 2 at most


def test_a_cut_off_ps_set_stalls_then_recovers(service: Service) -> None:
    job = fig1_job(service)
    service.client.event("link-down", link=("s1", "v2"))
    wait_for(lambda: not service.client.jobs()[0].draining_version)
    v = service.client.plan(job.id)
    assert list(v.pss) == ["s2"] and v.phase == 1 and v.partition["s2"] == 1.0
    (r,) = service.client.event("link-down", link=("s2", "v2")).replans
    assert r.outcome == pb.REPLAN_OUTCOME_FAILED and "no plan" in r.message
    stalled = service.client.jobs()[0]
    assert stalled.state == pb.JOB_STATE_STALLED and stalled.active_version == 2
    service.client.event("link-up", link=("s2", "v2"))
    (r,) = service.client.event("link-up", link=("s1", "v2")).replans
    wait_for(lambda: service.client.jobs()[0].state == pb.JOB_STATE_RUNNING)


def test_a_lost_switch_is_left_out_and_rejoins(service: Service) -> None:
    job = fig1_job(service)
    before = dict(service.installer.state["v1"])
    (r,) = service.client.event("switch-down", node="v1").replans
    assert r.outcome == pb.REPLAN_OUTCOME_NEW_VERSION
    v = service.client.plan(job.id)
    assert list(v.workers) == ["w5", "w6"]
    assert "v1" not in json.loads(v.plan_json)["topology"]["nodes"].__repr__()
    assert service.installer.state["v1"] == before  # a lost switch is not touched
    state = service.client.topology()
    assert [s.lost for s in state.switches] == [True, False]
    wait_for(lambda: not service.client.jobs()[0].draining_version)
    service.installer.restart("v1")  # it comes back empty
    (r,) = service.client.event("switch-up", node="v1").replans
    assert r.outcome == pb.REPLAN_OUTCOME_NEW_VERSION
    v = service.client.plan(job.id)
    assert list(v.workers) == WORKERS
    assert holds(service.installer.state["v1"], version_items(v, fig1(), 0)["v1"])


def test_cancel_leaves_no_entry_of_any_bank(tmp_path) -> None:
    svc = start_service(tmp_path / "s", drain_seconds=3600)
    try:
        job = fig1_job(svc)
        report(svc, job.id, WORKERS, 0)
        svc.client.event("link-down", link=("w1", "v1"))  # two banks installed
        cancelled = svc.client.cancel(job.id)
        assert cancelled.state == pb.JOB_STATE_CANCELLED
        for sw in FIG1_SWITCHES:
            items = svc.installer.state[sw]
            assert wire_jobs(items) == set()
            assert all(k[0] == "table" for k in items)  # no multicast group left
        assert code_of(lambda: svc.client.plan(job.id)) == grpc.StatusCode.NOT_FOUND
        assert [j.state for j in svc.client.jobs(include_cancelled=True)] == \
            [pb.JOB_STATE_CANCELLED]
    finally:
        svc.stop()


def test_a_restarted_service_recovers_its_jobs_and_adds_nothing_twice(tmp_path) -> None:
    first = start_service(tmp_path / "s", drain_seconds=3600)
    job = fig1_job(first)
    report(first, job.id, WORKERS, 3)
    first.client.event("link-down", link=("w1", "v1"))
    held = {sw: dict(items) for sw, items in first.installer.state.items()}
    writes = first.installer.writes
    first.stop()
    second = start_service(tmp_path / "s", installer=first.installer, drain_seconds=3600)
    try:
        assert first.installer.writes == writes  # the start-up reconcile found all in place
        assert first.installer.state == held
        (again,) = second.client.jobs()
        assert (again.id, again.active_version, again.draining_version) == (job.id, 2, 1)
        assert second.client.plan(job.id).switch_round == 4
        report(second, job.id, WORKERS[1:], 4)  # the hosts' progress survived too
        assert second.client.plan(job.id, 1).state == pb.VERSION_STATE_RETIRED
        assert {r.deleted for r in second.client.reconcile().switches} == {0}
    finally:
        second.stop()


def test_a_restarted_switch_gets_its_entries_again(service: Service) -> None:
    fig1_job(service)
    held = dict(service.installer.state["v2"])
    service.installer.restart("v2")
    report = {s.name: s for s in service.client.reconcile().switches}
    assert report["v2"].pipeline_pushed and report["v2"].inserted == len(held)
    assert report["v1"].inserted == report["v1"].deleted == 0
    assert service.installer.state["v2"] == held


def test_an_unreachable_switch_fails_the_install_and_the_job_keeps_its_version(
        service: Service) -> None:
    job = fig1_job(service)
    service.installer.down.add("v2")
    (r,) = service.client.event("link-down", link=("w1", "v1")).replans
    assert r.outcome == pb.REPLAN_OUTCOME_FAILED and "not answering" in r.message
    assert service.client.jobs()[0].active_version == 1
    assert wire_jobs(service.installer.state["v1"]) == {16}  # the half-made version is gone
    assert not service.client.topology().switches[1].reachable
    service.installer.down.clear()
    service.client.reconcile()  # repairs v2, then retries the job's re-plan
    assert service.client.plan(job.id).version == 2


def test_jobs_side_by_side_get_their_own_lanes(service: Service) -> None:
    topo = build_topology("fattree:4")
    service.client.register_topology(topo, {sw: f"127.0.0.1:{51000 + i}"
                                            for i, sw in enumerate(topo.switches)})
    jobs = [service.client.submit(topo.workers[3 * i:3 * i + 3], [topo.pss[i]], 1e6)
            for i in range(4)]
    assert [j.job_slot for j in jobs] == [0, 1, 2, 3]
    # each job's wire ids are its lane's (bank A, or B once re-planned beside a later job)
    assert [(service.client.plan(j.id).wire_job - 16) // 2 for j in jobs] == [0, 1, 2, 3]
    assert code_of(lambda: service.client.submit(topo.workers[:1], topo.pss[:1], 1)) == \
        grpc.StatusCode.FAILED_PRECONDITION
    service.client.cancel(jobs[1].id)
    again = service.client.submit(topo.workers[3:6], [topo.pss[1]], 1e6)
    assert again.job_slot == 1
    assert code_of(lambda: service.client.submit(topo.workers[:0] + ["w4"], [], 1)) == \
        grpc.StatusCode.FAILED_PRECONDITION  # w4 and every PS are taken
    for j in service.client.jobs():
        v = service.client.plan(j.id)
        for sw, items in version_items(v, topo, j.job_slot).items():
            assert holds(service.installer.state[sw], items)
    assert code_of(lambda: service.client.register_topology(fig1(), FIG1_SWITCHES)) == \
        grpc.StatusCode.FAILED_PRECONDITION


def test_watch_streams_events_and_versions_and_replays_since(service: Service) -> None:
    job = fig1_job(service)
    seen: list[pb.WatchEvent] = []
    stream = service.client.watch(job.id)

    def read() -> None:
        try:
            for ev in stream:
                seen.append(ev)
        except grpc.RpcError:
            pass
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.3)
    service.client.event("link-down", link=("w1", "v1"))
    wait_for(lambda: any(e.WhichOneof("what") == "version" and e.version.version == 1
                         and e.version.state == pb.VERSION_STATE_RETIRED for e in seen))
    stream.cancel()
    kinds = [e.WhichOneof("what") for e in seen]
    assert {"event", "install", "version"} <= set(kinds)
    assert [e.seq for e in seen] == sorted(e.seq for e in seen)
    made = next(e.version for e in seen if e.WhichOneof("what") == "version"
                and e.version.version == 2)
    assert made.state == pb.VERSION_STATE_ACTIVE and made.plan_json == ""
    replay = service.client.watch(job.id, since=seen[0].seq)
    first = next(iter(replay))
    replay.cancel()
    assert first.seq == seen[1].seq
    assert code_of(lambda: next(iter(service.client.watch(99)))) == grpc.StatusCode.NOT_FOUND


def test_a_retired_version_keeps_its_addresses_after_a_restart(tmp_path) -> None:
    first = start_service(tmp_path / "s")
    job = fig1_job(first)
    first.client.event("link-down", link=("w1", "v1"))
    wait_for(lambda: first.client.plan(job.id, 1).state == pb.VERSION_STATE_RETIRED)
    before = first.client.plan(job.id, 1)
    assert before.result_address and before.pool_size and before.ranks
    first.stop()
    second = start_service(tmp_path / "s", installer=first.installer)
    try:
        after = second.client.plan(job.id, 1)
        assert (after.result_address, after.pool_size, dict(after.ranks)) == \
            (before.result_address, before.pool_size, dict(before.ranks))
    finally:
        second.stop()


def test_a_version_made_before_any_report_answers_every_round_and_drains_by_time(
        tmp_path) -> None:
    svc = start_service(tmp_path / "s", drain_seconds=1.0)
    try:
        job = fig1_job(svc)
        (r,) = svc.client.event("link-down", link=("w1", "v1")).replans
        assert r.outcome == pb.REPLAN_OUTCOME_NEW_VERSION and "split kept" not in r.message
        active = svc.client.plan(job.id)
        assert (active.version, active.switch_round) == (2, 0)
        # the newest installed version with switch_round <= round, as GetPlan says
        assert svc.client.progress(job.id, "w2", 5).version == 2
        # a report after the version was made does not turn its drain into waiting for
        # every worker: no worker had started a round on version 1
        wait_for(lambda: svc.client.plan(job.id, 1).state == pb.VERSION_STATE_RETIRED)
    finally:
        svc.stop()


def watched(svc: Service, since: int) -> list[pb.WatchEvent]:
    """Every message a Watch from ``since`` gets within a second."""
    seen: list[pb.WatchEvent] = []
    with pytest.raises(grpc.RpcError) as info:
        seen.extend(svc.client.watch(since=since, timeout=1.0))
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    return seen


def test_watch_sequence_numbers_go_on_across_a_restart(tmp_path) -> None:
    first = start_service(tmp_path / "s")
    fig1_job(first)
    first.client.event("link-down", link=("w1", "v1"))
    before = watched(first, 0)
    last = before[-1].seq
    assert [e.seq for e in before] == list(range(1, last + 1))
    first.stop()
    second = start_service(tmp_path / "s", installer=first.installer)
    try:
        second.client.event("link-up", link=("w1", "v1"))
        after = watched(second, last)  # a client that saw ``last`` reconnects
        assert after and after[0].seq == last + 1
        assert any(e.WhichOneof("what") == "event" for e in after)
        # and one that saw less gets the rest of the first life too
        again = [e.seq for e in watched(second, 2)]
        assert again == list(range(3, again[-1] + 1)) and again[-1] >= after[-1].seq
    finally:
        second.stop()
