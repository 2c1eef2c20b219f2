"""The service on two real P4 switches (embedded targets, started alone) registered as fig1's
v1 and v2: installs, make-before-break across banks, cancel, a restarted switch and a
restarted service, all checked by reading the switches back over P4Runtime."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from control_plane.drivers.p4runtime import P4RuntimeError
from control_plane.model.topologies import fig1
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.switches import P4RuntimeInstaller
from tests.service.conftest import Service, start_service
from tests.service.helpers import PIPELINE, Switch, fig1_switches

WORKERS = [f"w{i}" for i in range(1, 7)]


@pytest.fixture(scope="module")
def switches(tmp_path_factory) -> Iterator[dict[str, Switch]]:
    with fig1_switches(tmp_path_factory.mktemp("switches")) as started:
        yield started


def serve(state: Path, switches: dict[str, Switch]) -> Service:
    svc = start_service(state, P4RuntimeInstaller(PIPELINE), drain_seconds=3600)
    svc.client.register_topology(fig1(), {n: (s.spec.grpc, s.spec.device_id)
                                          for n, s in switches.items()})
    return svc


def test_versions_go_into_the_other_bank_and_the_old_one_is_removed(switches, tmp_path) -> None:
    svc = serve(tmp_path / "s", switches)
    try:
        job = svc.client.submit(model_size=1e6)
        v1 = svc.client.plan(job.id)
        for sw in switches.values():
            assert sw.wire_jobs() == {v1.wire_job}
        tables, groups = switches["v2"].read()
        assert sorted(groups) == [1, 2]  # bank A of the first lane: groups 1..|S|
        assert len(tables["InaIngress.route_dst"]) == 6 + 2 * 2  # hosts + PS aliases
        for w in WORKERS:
            assert svc.client.progress(job.id, w, 7).version == 1
        (r,) = svc.client.event("link-down", link=("w1", "v1")).replans
        assert r.outcome == pb.REPLAN_OUTCOME_NEW_VERSION and r.version == 2
        v2 = svc.client.plan(job.id)
        assert v2.bank == "B" and v2.switch_round == 8
        for sw in switches.values():  # make: both banks side by side
            assert sw.wire_jobs() == {v1.wire_job, v2.wire_job}
        _, groups = switches["v2"].read()
        assert len(groups) == 4
        for w in WORKERS[1:]:
            assert svc.client.progress(job.id, w, 8).version == 2
        assert svc.client.plan(job.id, 1).state == pb.VERSION_STATE_RETIRED
        for sw in switches.values():  # break: bank A is gone
            assert sw.wire_jobs() == {v2.wire_job}
        _, groups = switches["v2"].read()
        assert all(g > 8192 for g in groups)
        svc.client.cancel(job.id)
        for sw in switches.values():
            tables, groups = sw.read()
            assert groups == {} and sw.wire_jobs() == set()
            assert not tables["InaIngress.route_pair"] and not tables["InaEgress.result_rewrite"]
            assert tables["InaIngress.route_dst"]  # the network's routes stay
    finally:
        svc.stop()


def test_a_restarted_switch_and_a_restarted_service_are_reconciled(switches, tmp_path) -> None:
    svc = serve(tmp_path / "s", switches)
    try:
        svc.client.submit(model_size=1e6)
        held = {n: sw.count() for n, sw in switches.items()}
        switches["v2"].restart()
        assert not _has_pipeline(switches["v2"])  # it came back empty
        report = {s.name: s for s in svc.client.reconcile().switches}
        assert report["v2"].pipeline_pushed and report["v2"].inserted == held["v2"]
        assert report["v1"].inserted == report["v1"].deleted == 0
        assert {n: sw.count() for n, sw in switches.items()} == held
    finally:
        svc.stop()
    again = start_service(tmp_path / "s", P4RuntimeInstaller(PIPELINE), drain_seconds=3600)
    try:
        (job,) = again.client.jobs()
        assert job.active_version == 1
        report = again.client.reconcile()
        assert all(s.reachable and not (s.inserted or s.modified or s.deleted)
                   for s in report.switches)
        assert {n: sw.count() for n, sw in switches.items()} == held  # nothing twice
        again.client.cancel(job.id)
    finally:
        again.stop()


def _has_pipeline(sw: Switch) -> bool:
    try:
        sw.read()
    except P4RuntimeError as exc:  # FAILED_PRECONDITION: no pipeline, reads are refused
        assert exc.code == grpc.StatusCode.FAILED_PRECONDITION
        return False
    return True
