"""Requests that once got INTERNAL or RESOURCE_EXHAUSTED instead of a clear refusal, an
INTERNAL error's log record, and Watch streams abandoned before they started."""

from __future__ import annotations

import json
import logging
import threading
import time

import grpc
import pytest

from control_plane.model.topologies import fig1
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.server import MAX_ROUND, MAX_WATCHERS
from tests.service.conftest import FIG1_SWITCHES, Service

HUGE = "x" * (1 << 20)  # 1 MiB: quoted whole, it overflows gRPC's metadata limit


def refused(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


def fig1_with(**change: object) -> str:
    topo = fig1().to_dict()
    topo.update(change)
    return json.dumps(topo)


@pytest.mark.parametrize("nodes", [5, True, 1.5, "w1", None])
def test_a_topology_whose_nodes_are_no_list_is_invalid(service: Service, nodes: object) -> None:
    err = refused(lambda: service.client.register_topology(fig1_with(nodes=nodes),
                                                           FIG1_SWITCHES))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("topology_json: ") and "'nodes' must be a list" in \
        err.details()


@pytest.mark.parametrize("port", ["²", "٣", "5\u0661"])
def test_a_port_of_non_ascii_digits_is_invalid(service: Service, port: str) -> None:
    err = refused(lambda: service.client.register_topology(
        fig1(), {"v1": f"127.0.0.1:{port}", "v2": "127.0.0.1:50902"}))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("switches[0].address: ")


def huge_topology(where: str) -> str:
    topo = fig1().to_dict()
    if where == "node":
        topo["nodes"][0]["id"] = HUGE
    elif where == "kind":
        topo["nodes"][0]["kind"] = HUGE
    else:
        topo["links"].append({"src": HUGE, "dst": "v1", "capacity": 1})
    return json.dumps(topo)


@pytest.mark.parametrize("where", ["node", "kind", "link"])
def test_a_huge_id_in_a_topology_is_quoted_short(service: Service, where: str) -> None:
    err = refused(lambda: service.client.register_topology(huge_topology(where), FIG1_SWITCHES))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()[:200]
    assert err.details().startswith("topology_json: ") and len(err.details()) < 400


@pytest.mark.parametrize("what", ["address", "port", "name"])
def test_a_huge_switch_address_or_name_is_quoted_short(service: Service, what: str) -> None:
    switches = {"v1": "127.0.0.1:50901", "v2": "127.0.0.1:50902"}
    if what == "address":
        switches["v1"] = HUGE + ":50901"
    elif what == "port":
        switches["v1"] = "127.0.0.1:" + HUGE
    else:
        switches[HUGE] = "127.0.0.1:1"
    err = refused(lambda: service.client.register_topology(fig1(), switches))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()[:200]
    assert err.details().startswith("switches[") and len(err.details()) < 400


def test_huge_ids_in_events_jobs_and_progress_are_quoted_short(service: Service) -> None:
    c = service.client
    c.register_topology(fig1(), FIG1_SWITCHES)
    job = c.submit(model_size=1e6)
    for call in (lambda: c.event("link-down", link=(HUGE, "v1")),
                 lambda: c.event("link-down", link=("w1", HUGE)),
                 lambda: c.event("switch-down", node=HUGE),
                 lambda: c.submit(workers=[HUGE], model_size=1),
                 lambda: c.submit(scheme=HUGE, model_size=1),
                 lambda: c.progress(job.id, HUGE, 1)):
        err = refused(call)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and len(err.details()) < 400


def test_rounds_are_bounded_so_every_switch_round_can_be_reported(service: Service) -> None:
    c = service.client
    c.register_topology(fig1(), FIG1_SWITCHES)
    job = c.submit(model_size=1e6)
    for big in (MAX_ROUND + 1, (1 << 63) - 1):
        err = refused(lambda: c.progress(job.id, "w1", big))  # noqa: B023
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert err.details().startswith("round: ") and "2^62" in err.details()
    assert c.progress(job.id, "w1", MAX_ROUND - 1).version == 1
    # the next version starts one round later, and that round can still be reported
    reply = c.event("link-load", link=("v1", "v2"), value=5.0)
    assert reply.replans[0].outcome == pb.REPLAN_OUTCOME_NEW_VERSION
    assert c.plan(job.id).switch_round == MAX_ROUND
    assert c.progress(job.id, "w1", MAX_ROUND).version == 2


def test_an_internal_error_is_logged_with_its_traceback(service: Service, caplog,
                                                        monkeypatch) -> None:
    def broken(include_cancelled: bool) -> pb.ListJobsResponse:
        raise RuntimeError("a bug")
    monkeypatch.setattr(service.controller, "list_jobs", broken)
    with caplog.at_level(logging.ERROR, logger="control_plane.service.server"):
        err = refused(service.client.jobs)
    assert err.code() == grpc.StatusCode.INTERNAL
    assert err.details() == "ListJobs: RuntimeError: a bug"
    (record,) = [r for r in caplog.records if r.name == "control_plane.service.server"]
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    assert "Traceback" in caplog.text and "NoneType: None" not in caplog.text


def test_watch_streams_cancelled_at_once_free_their_slots(service: Service) -> None:
    c = service.client
    c.register_topology(fig1(), FIG1_SWITCHES)
    c.submit(model_size=1e6)
    stop = threading.Event()

    def storm() -> None:
        down = True
        while not stop.is_set():
            c.event("link-down" if down else "link-up", link=("v1", "v2"))
            down = not down
    events = threading.Thread(target=storm, daemon=True)
    events.start()
    try:
        for _ in range(200):
            stream = c.watch()
            time.sleep(0.002)
            stream.cancel()
    finally:
        stop.set()
        events.join()
    deadline = time.monotonic() + 10
    while service.controller.hub.subs and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.controller.hub.subs == []
    streams = [c.watch(since=0) for _ in range(MAX_WATCHERS)]
    try:
        assert all(next(iter(s)).seq >= 1 for s in streams)  # every slot is free again
    finally:
        for s in streams:
            s.cancel()
