"""The web view in a real browser: headless Chromium opens `inart serve --web` for a job on
a fig1 Mininet network of embedded switches, finds every switch and host of the topology on
the page, sees the job's round advance as its hosts train, then a link down is reported
through the service's API and the page draws the new plan version, without a reload.

The screenshot it takes is docs/web-view.png: set INART_SCREENSHOT_DIR=docs to
refresh it."""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from control_plane.deploy.addressing import assign
from control_plane.model.topologies import fig1
from control_plane.service.client import Client
from emulation.network.mininet_net import Network
from host_stack.train.hostrun import JobResult, TrafficConfig, run_hosts, service_job
from tests.browser import chromium
from tests.foreground import inart_foreground

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet_and_program")]
SCALE = 0.25  # Mbit/s per topology unit, as in test_emulation_e2e.py
ROUNDS = 8
CUT = ("w6", "v2")  # fig1 is a tree: the service re-plans without w6
SCREENSHOT = "web-view.png"


def wait_for(what: str, check, timeout: float = 60.0, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"the page never showed {what} within {timeout:.0f} s")


def test_web_view_of_a_fig1_job_in_chromium(tmp_path: Path) -> None:
    topo = fig1()
    addr = assign(topo)
    sock = f"unix:{tmp_path / 'serve.sock'}"
    with ExitStack() as stack:
        net = stack.enter_context(Network(topo, addr, tmp_path / "net", "embedded", SCALE,
                                          quiet=True))
        line = stack.enter_context(inart_foreground(
            "serve", "--listen", sock, "--state", str(tmp_path / "state"), "--web",
            "127.0.0.1:0", "--reconcile-interval", "3600", "--drain-seconds", "1"))
        url = re.search(r"web view on (http://\S+)", line)
        assert url, line
        client = stack.enter_context(Client(sock))
        net.prepare_versions()
        client.register_topology(topo, {sw: (addr.grpc_address(sw), addr.device_id[sw])
                                        for sw in topo.switches})
        cfg = TrafficConfig(rounds=ROUNDS, values=32 * 600, unit_bps=SCALE * 1e6,
                            deadline_s=300)
        job = client.submit(model_size=cfg.values, name="fig1")
        first = client.plan(job.id)
        results: list[JobResult | BaseException] = []

        def train() -> None:
            try:
                results.append(run_hosts(net, service_job(sock, job.id, list(first.workers),
                                                          list(first.pss), dict(first.ranks)),
                                         cfg, tmp_path / "hosts", quiet=True))
            except BaseException as exc:  # noqa: BLE001 - the test reports it
                results.append(exc)
        hosts = threading.Thread(target=train, daemon=True)
        hosts.start()
        browser = stack.enter_context(chromium())
        browser.get(url.group(1))

        def page(script: str):
            """Read the page in one script: it redraws between two separate reads."""
            return browser.execute_script(f"return ({script});")
        drawn = "[...document.querySelectorAll('[data-node]')].map(e => e.dataset.node)"
        wait_for("every switch and host", lambda: set(page(drawn) or ()) == set(topo.nodes),
                 timeout=30)
        assert page("document.querySelectorAll('rect[data-aggregates=\"true\"]').length"), \
            "no aggregation switch drawn for the job's plan"

        def shown_round() -> int | None:
            text = page(f"(document.querySelector('tr[data-job=\"{job.id}\"]') || "
                        f"{{dataset: {{}}}}).dataset.round")
            return int(text) if text else None
        seen = wait_for("a round", shown_round, timeout=120)
        wait_for("the round advance", lambda: (shown_round() or 0) > seen, timeout=120)
        hosts.join(timeout=300)
        assert results and isinstance(results[0], JobResult), results
        assert results[0].exact is True

        reply = client.event("link-down", link=CUT)
        assert reply.replans and reply.replans[0].version == 2, reply
        wait_for("plan version 2", lambda: page(
            "document.querySelector('#plan[data-plan-version=\"2\"]') !== null"), timeout=30)
        down = page("[...document.querySelectorAll('line.link.down')].map(e => e.dataset.link)")
        assert down in (["w6-v2"], ["v2-w6"]), down
        wait_for("the event in the log", lambda: "link_down w6 <-> v2" in page(
            "document.getElementById('events').textContent"), timeout=10)
        shot = tmp_path / SCREENSHOT
        assert browser.save_screenshot(str(shot))
        if os.environ.get("INART_SCREENSHOT_DIR"):
            shutil.copy(shot, Path(os.environ["INART_SCREENSHOT_DIR"]) / SCREENSHOT)
