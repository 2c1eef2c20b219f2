"""Hosts following a service's plan versions (host_stack/ina/follow.py) against a real service
(switches in memory), and what a failed link does to the version that drains: its (src, dst)
routes over that link give way to the destination routes computed on the links that are up.
The PS and worker processes following versions over real switches: tests/emulation/
test_service_training.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from control_plane.deploy.addressing import assign
from control_plane.deploy.versions import Lane, compile_version
from control_plane.localhost import free_ports
from control_plane.model.plan import Plan
from control_plane.model.topologies import build_topology, fig1
from control_plane.repo import REPO, child_env
from control_plane.service.auth import AuthConfigError, check_listen
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.switches import ItemCache
from host_stack.ina import wire
from host_stack.ina.follow import FollowError, ServiceLink
from tests.service.conftest import FIG1_SWITCHES, Service, start_service
from tests.service.helpers import INFO, holds, version_items


def test_a_version_as_hosts_run_it(service: Service) -> None:
    service.client.register_topology(fig1(), FIG1_SWITCHES)
    job = service.client.submit(model_size=1e4)
    link = ServiceLink(service.address, job.id, "w2")
    try:
        v1 = link.version(1)
        msg = service.client.plan(job.id)
        assert v1.number == 1 and v1.plan.job == msg.wire_job == 16
        assert v1.plan.rank("w2") == msg.ranks["w2"]
        assert v1.addresses["s1"] == (msg.addresses["s1"], wire.GRAD_PORT)
        assert msg.addresses["s1"].startswith("10.2.")
        assert v1.addresses["w2"][1] == wire.RESULT_PORT
        assert v1.result_to == (msg.result_address, wire.RESULT_PORT)
        assert v1.pool_size == msg.pool_size > 0
        assert [v.number for v in link.installed()] == [1]
        # no host reported yet: a slowed PS reruns phase 1, a version hosts cannot follow
        (r,) = service.client.event("ps-load", node="s1", value=3.0).replans
        assert r.phase == 1
        v2 = link.version(2)
        assert v2.addresses["s1"][0].startswith("10.6.")
        with pytest.raises(FollowError, match="split moved"):
            v2.check_follows(v1, 10_000, wire.DEFAULT_N)
    finally:
        link.close()


def test_a_job_whose_hosts_train_keeps_its_split(service: Service) -> None:
    service.client.register_topology(fig1(), FIG1_SWITCHES)
    job = service.client.submit(model_size=1e4)
    link = ServiceLink(service.address, job.id, "w2")
    try:
        v1 = link.for_round(0)  # a host reports: the PSs hold shards now
        (r,) = service.client.event("ps-load", node="s1", value=3.0).replans
        assert r.phase == 2 and "split kept while its hosts train" in r.message
        assert "restart the job to apply" in r.message
        if r.outcome == pb.REPLAN_OUTCOME_NEW_VERSION:
            link.for_round(1).check_follows(v1, 10_000, wire.DEFAULT_N)
        assert service.client.plan(job.id).partition == v1.plan.plan.partition
    finally:
        link.close()


def test_an_unknown_job_is_a_clear_error(service: Service) -> None:
    link = ServiceLink(service.address, 99, "w1")
    try:
        with pytest.raises(FollowError, match="job 99.*NOT_FOUND"):
            link.for_round(0)
    finally:
        link.close()


def test_a_failed_link_takes_the_draining_versions_routes_over_it_along(tmp_path: Path) -> None:
    topo = build_topology("leafspine:2,2,3", ps=2, preset="heterogeneous", seed=4)
    addr = assign(topo)
    svc = start_service(tmp_path / "s", drain_seconds=3600)
    try:
        svc.client.register_topology(topo, {sw: (f"127.0.0.1:{50900 + i}", i + 1)
                                            for i, sw in enumerate(topo.switches)})
        job = svc.client.submit(model_size=1e4)
        old = svc.client.plan(job.id)
        svc.client.event("link-down", link=("l2", "sp1"))
        new = svc.client.plan(job.id)
        assert new.version == 2
        compiled = compile_version(Plan.from_dict(json.loads(old.plan_json)), addr, Lane(0, 0))
        pairs = [(swe.switch, e) for swe in compiled.switches.values() for e in swe.entries
                 if e.table == "InaIngress.route_pair"]
        crossing = {e.match for sw, e in pairs
                    if {sw, addr.neighbour_of(sw, dict(e.params)["port"])} == {"l2", "sp1"}}
        assert crossing and len(crossing) < len({e.match for _, e in pairs})
        cache = ItemCache(INFO)
        for sw, entry in pairs:  # every switch of a crossing pair's path lets it go
            assert (cache.item(entry).key in svc.installer.state[sw]) != (entry.match in
                                                                           crossing), (sw, entry)
        others = {sw: {k: i for k, i in items.items() if k[1] != INFO.table(
                      "InaIngress.route_pair").preamble.id}
                  for sw, items in version_items(old, topo, 0).items()}
        for sw, items in others.items():  # the rest of the draining version stays
            assert holds(svc.installer.state[sw], items)
        for sw, items in version_items(new, topo, 0).items():  # the new version is whole
            assert holds(svc.installer.state[sw], items)
    finally:
        svc.stop()


def test_unix_socket_listen_addresses_need_no_token() -> None:
    check_listen("unix:/run/inart.sock", None)
    with pytest.raises(AuthConfigError, match="unix:PATH"):
        check_listen("unix:", None)


@pytest.mark.parametrize("args, code, message", [
    (["--service", "unix:/nonexistent/inart.sock", "--job-id", "1"], 3, "service unix:"),
    (["--service", "127.0.0.1:1", "--job-id", "1", "--plan", "p.json"], 2, "drop --plan"),
    (["--service", "127.0.0.1:1"], 2, "--job-id None"),
    (["--job-id", "1"], 2, "--job-id: only with --service"),
])
def test_a_worker_refuses_bad_service_options_by_name(args, code, message) -> None:
    proc = subprocess.run([sys.executable, "-m", "host_stack.train.worker", "--worker", "w1",
                           "--model", "synthetic", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=child_env())
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_a_restarting_service_is_asked_again_until_the_links_timeout(tmp_path: Path) -> None:
    """A service killed and restarted (nothing listens meanwhile: UNAVAILABLE) is asked
    again, so hosts ride through the restart; one that stays away is a FollowError once the
    link's timeout passed, not a hang."""
    (port,) = free_ports(1)
    link = ServiceLink(f"127.0.0.1:{port}", 99, "w1", timeout=30)
    started: list[Service] = []

    def come_up() -> None:
        time.sleep(1.0)
        started.append(start_service(tmp_path / "state", listen=f"127.0.0.1:{port}"))

    later = threading.Thread(target=come_up)
    later.start()
    try:
        with pytest.raises(FollowError, match="job 99.*NOT_FOUND"):  # answered, once up
            link.for_round(0)
    finally:
        later.join()
        link.close()
        for svc in started:
            svc.stop()
    (port,) = free_ports(1)
    gone = ServiceLink(f"127.0.0.1:{port}", 99, "w1", timeout=1.0)
    t0 = time.monotonic()
    try:
        with pytest.raises(FollowError, match="UNAVAILABLE"):
            gone.for_round(0)
    finally:
        gone.close()
    assert 1.0 <= time.monotonic() - t0 < 10
