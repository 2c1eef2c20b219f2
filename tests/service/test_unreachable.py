"""A switch that never answers (a socket that listens but never speaks) must not hold up the
service's reads: switch I/O runs without the state lock."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from control_plane.deploy.pipeline import pipeline_for
from control_plane.model.topologies import fig1
from control_plane.service.switches import P4RuntimeInstaller
from tests.service.conftest import start_service

P4_TIMEOUT = 1.0  # what each attempt to reach the switch waits


@pytest.fixture
def blackhole() -> Iterator[str]:
    """An address that accepts TCP connections (the kernel does) but never answers."""
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(64)
        yield f"127.0.0.1:{hole.getsockname()[1]}"


def slowest(read: Callable[[], object], busy: threading.Thread) -> float:
    """The longest ``read`` took while ``busy`` ran (at least three reads)."""
    worst, count = 0.0, 0
    while busy.is_alive() or count < 3:
        t0 = time.perf_counter()
        read()
        worst, count = max(worst, time.perf_counter() - t0), count + 1
        time.sleep(0.05)
    return worst


def test_reads_answer_at_once_while_a_switch_does_not(tmp_path, blackhole: str) -> None:
    installer = P4RuntimeInstaller(pipeline_for("embedded"), timeout=P4_TIMEOUT)
    svc = start_service(tmp_path / "s", installer=installer)
    c = svc.client
    try:
        def in_background(call: Callable[[], object]) -> threading.Thread:
            thread = threading.Thread(target=call, daemon=True)
            thread.start()
            time.sleep(0.2)  # let it take the service's operation lock
            return thread
        register = in_background(lambda: c.register_topology(
            fig1(), {"v1": (blackhole, 1), "v2": (blackhole, 2)}))
        t0 = time.perf_counter()
        assert slowest(c.jobs, register) < 0.5
        assert time.perf_counter() - t0 >= P4_TIMEOUT * 0.8  # the register did wait
        submit = in_background(lambda: c.submit(model_size=1e6))
        assert slowest(c.topology, submit) < 0.5
        assert c.jobs()[0].active_version == 0  # its install failed
        reconcile = in_background(c.reconcile)
        assert slowest(c.jobs, reconcile) < 0.5
        down = in_background(lambda: c.event("switch-down", node="v1"))
        assert slowest(c.jobs, down) < 0.5
        assert not any(s.reachable for s in c.topology().switches)
    finally:
        svc.stop()


def test_events_do_not_wait_for_a_switch_that_does_not_answer(tmp_path, blackhole: str) -> None:
    """A reconcile probes silent switches beside the service's operations, and an operation
    does not wait again for a switch that was silent a moment ago: an event (reporting the
    switch lost, too) answers while a reconcile still waits for the switch."""
    # an event that waited for the probe would answer after ~3.8 s; one that did not, in
    # milliseconds, but on a loaded 2-core machine (a full CI run) once in 1.25 s
    timeout = 4.0
    installer = P4RuntimeInstaller(pipeline_for("embedded"), timeout=timeout, holdoff=60)
    svc = start_service(tmp_path / "s", installer=installer)
    c = svc.client
    try:
        c.register_topology(fig1(), {"v1": (blackhole, 1), "v2": (blackhole, 2)})
        c.submit(model_size=1e6)  # stalled: no switch answers
        for kind, link, node in (("link-down", ("w1", "v1"), ""), ("link-up", ("w1", "v1"), ""),
                                 ("switch-down", None, "v1")):
            reconcile = threading.Thread(target=c.reconcile, daemon=True)
            reconcile.start()
            time.sleep(0.2)  # it probes the switches now, for ``timeout`` seconds
            t0 = time.perf_counter()
            c.event(kind, link=link, node=node)
            assert time.perf_counter() - t0 < timeout * 0.75, kind
            reconcile.join()
        assert {s.name: s.lost for s in c.topology().switches} == {"v1": True, "v2": False}
    finally:
        svc.stop()
