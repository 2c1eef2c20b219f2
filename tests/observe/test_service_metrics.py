"""`inart serve`'s /metrics: scraped while a job is submitted, an event re-plans it and RPCs
run; and a --metrics port that is taken is refused with the process holding it."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from control_plane.model.topologies import build_topology
from control_plane.observe.exporter import scrape, value
from control_plane.repo import REPO, child_env
from control_plane.service.client import Client
from tests.foreground import inart_foreground

FIG1_SWITCHES = {"v1": "127.0.0.1:50001", "v2": "127.0.0.1:50002"}


def metrics_url(line: str) -> str:
    found = re.search(r"metrics on (http://\S+/metrics)", line)
    assert found, line
    return found.group(1)


def test_serve_metrics_move_with_jobs_events_and_rpcs(tmp_path: Path) -> None:
    with inart_foreground("serve", "--listen", "127.0.0.1:0", "--switches", "memory",
                          "--state", str(tmp_path / "state")) as line:
        url = metrics_url(line)
        before = scrape(url)
        assert value(before, "inart_service_jobs", state="running") == 0
        address = re.search(r"listening on (\S+)", line).group(1)
        with Client(address) as client:
            client.register_topology(build_topology("fig1"), FIG1_SWITCHES)
            job = client.submit(model_size=1e6, name="metrics")
            client.event("link-load", link=("v1", "v2"), value=3.0)
            client.jobs()
        after = scrape(url)
    assert value(after, "inart_service_jobs", state="running") == 1
    assert value(after, "inart_service_job_plan_version", job=str(job.id)) >= 1
    assert value(after, "inart_service_plan_installs_total", reason="submitted") == 1
    assert value(after, "inart_service_plan_install_duration_seconds_count") >= 1
    assert value(after, "inart_service_events_total", kind="EVENT_KIND_LINK_LOAD") == 1
    for method in ("RegisterTopology", "SubmitJob", "ReportEvent", "ListJobs"):
        assert value(after, "inart_service_rpc_duration_seconds_count", method=method) == 1
    assert value(after, "inart_service_switch_reachable", switch="v1") == 1


def test_taken_metrics_port_names_its_holder(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "control_plane.cli", "serve", "--listen",
                               "127.0.0.1:0", "--switches", "memory", "--state",
                               str(tmp_path / "state"), "--metrics", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, cwd=REPO, env=child_env(),
                              timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"port {port} is in use by pid {os.getpid()}" in done.stdout, done.stdout
