"""The web view's server: the page and its data, live updates over server-sent events, a
token it refuses, and clients that stop reading, which must not stall the others."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from control_plane.model.topologies import build_topology
from control_plane.observe import view
from control_plane.observe.web import WebError, WebView
from control_plane.repo import REPO, child_env
from control_plane.solver.solve import plan_for

TOKEN = "s3cret-token-0123456789"


class Ticking:
    """A source whose document changes at every read; ``pad`` bytes make each one large."""

    def __init__(self, pad: int = 0) -> None:
        self.n, self.pad = 0, pad

    def __call__(self) -> dict:
        self.n += 1
        return {"n": self.n, "pad": "x" * self.pad}


@pytest.fixture
def ticking() -> Iterator[WebView]:
    web = WebView("127.0.0.1:0", Ticking(pad=256 << 10), interval_s=0.05)
    yield web
    web.close()


def get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_page_state_and_events_of_a_planned_fig1() -> None:
    topo = build_topology("fig1")
    plan = plan_for(topo, "inart", 0)
    doc = view.base(topo, "serve", "fig1")
    doc.update(links=view.links(topo, view.planned_loads([plan])),
               jobs=[view.job(1, "a", "running", 3, 1, plan)])
    web = WebView("127.0.0.1:0", lambda: doc)
    try:
        status, page = get(web.url)
        assert status == 200 and b"static/app.js" in page
        assert get(web.url + "static/app.js")[0] == 200
        assert get(web.url + "static/../web.py")[0] == 404
        state = json.loads(get(web.url + "api/state")[1])
        assert {n["id"] for n in state["nodes"]} == set(topo.nodes)
        busiest = max(state["links"], key=lambda lk: lk["utilisation"])
        assert 0 < busiest["utilisation"] <= 1.0 + 1e-9  # the plan fits its capacities
        assert state["jobs"][0]["plan"]["aggregate_at"]
        with urllib.request.urlopen(web.url + "api/events", timeout=5) as stream:
            assert stream.readline() == b"event: state\n"
            assert json.loads(stream.readline()[len(b"data: "):]) == state
    finally:
        web.close()


def test_a_wrong_token_is_refused() -> None:
    web = WebView("127.0.0.1:0", lambda: {"n": 1}, token=TOKEN)
    try:
        assert get(web.url + "api/state")[0] == 401
        assert get(web.url + "api/state?token=wrong")[0] == 401
        request = urllib.request.Request(web.url + "api/events",
                                         headers={"Authorization": "Bearer wrong"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 401
        assert get(web.url + f"api/state?token={TOKEN}") == (200, b'{"n":1}')
    finally:
        web.close()


def test_off_loopback_needs_a_token_and_tls() -> None:
    with pytest.raises(WebError, match="needs --token-file"):
        WebView("0.0.0.0:0", lambda: {})
    with pytest.raises(WebError, match="needs TLS"):
        WebView("0.0.0.0:0", lambda: {}, token=TOKEN)


def test_clients_that_stop_reading_are_dropped_not_waited_for(ticking: WebView) -> None:
    host, port = ticking.server.server_address[:2]
    stuck = []
    for _ in range(4):  # they ask for the stream, then never read a byte
        s = socket.create_connection((host, port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n")
        stuck.append(s)
    try:
        deadline = time.monotonic() + 30
        while ticking.broadcaster.dropped < len(stuck) and time.monotonic() < deadline:
            # meanwhile a reader gets fresh documents at once
            t0 = time.monotonic()
            status, body = get(ticking.url + "api/state", timeout=5)
            assert status == 200 and time.monotonic() - t0 < 2.0
            time.sleep(0.1)
        assert ticking.broadcaster.dropped == len(stuck), "slow clients were not dropped"
        assert not ticking.broadcaster.clients
        before = json.loads(get(ticking.url + "api/state")[1])["n"]
        time.sleep(0.5)
        assert json.loads(get(ticking.url + "api/state")[1])["n"] > before  # still polling
    finally:
        for s in stuck:
            s.close()


def test_a_taken_port_names_its_holder() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(WebError, match=f"in use by pid {os.getpid()} "):
            WebView(f"127.0.0.1:{port}", lambda: {})


@pytest.mark.parametrize("argv, message", [
    (["--web", "0.0.0.0:0"], "--web '0.0.0.0:0': not a loopback address"),
    (["--web", "unix:/tmp/x"], "--web unix:/tmp/x: expected HOST:PORT"),
    (["--metrics", "nope"], "--metrics: address 'nope': expected HOST:PORT"),
])
def test_emulate_refuses_bad_observers_before_any_work(argv, message, tmp_path) -> None:
    done = subprocess.run([sys.executable, "-m", "control_plane.cli", "emulate", "-t", "fig1",
                           "--out", str(tmp_path), *argv], capture_output=True, text=True,
                          cwd=REPO, env=child_env(), timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr, done.stderr
