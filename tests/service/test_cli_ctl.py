"""`inart serve` and `inart ctl` as a user runs them (switches in memory), and the replan
bench's output format."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from control_plane.repo import REPO, child_env
from tests.foreground import inart_foreground


def inart(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env=child_env())


@pytest.fixture
def server(tmp_path) -> Iterator[str]:
    with inart_foreground("serve", "--switches", "memory", "--listen", "127.0.0.1:0",
                          "--state", str(tmp_path), "--drain-seconds", "0") as line:
        found = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
        assert found, line
        yield found.group(1)


def ctl(server: str, *args: str) -> dict:
    proc = inart("ctl", *args, "--server", server, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_ctl_session(server: str) -> None:
    state = ctl(server, "topology", "fig1", "--switch", "v1=127.0.0.1:50901,device=1",
                "--switch", "v2=127.0.0.1:50902,device=2")
    assert [s["name"] for s in state["switches"]] == ["v1", "v2"]
    job = ctl(server, "submit", "--model-size", "1e6", "--name", "demo")
    assert job["state"] == "JOB_STATE_RUNNING" and job["active_version"] == 1
    plan = ctl(server, "plan", str(job["id"]))
    assert plan["bank"] == "A" and json.loads(plan["plan_json"])["schema"] == "inart.plan/1"
    reply = ctl(server, "event", "link-down", "w1", "v1")
    assert reply["replans"][0]["outcome"] == "REPLAN_OUTCOME_NEW_VERSION"
    assert ctl(server, "plan", str(job["id"]))["bank"] == "B"
    (listed,) = ctl(server, "jobs")["jobs"]
    assert listed["state"] == "JOB_STATE_DEGRADED"
    watched = inart("ctl", "watch", "--server", server, "--count", "3", "--json")
    lines = [json.loads(x) for x in watched.stdout.splitlines()]
    assert len(lines) == 3 and all("seq" in x for x in lines)
    text = inart("ctl", "jobs", "--server", server).stdout
    assert "job 1 degraded" in text and "cut off: w1" in text
    assert ctl(server, "cancel", "1")["state"] == "JOB_STATE_CANCELLED"
    bad = inart("ctl", "event", "link-down", "w1", "w2", "--server", server)
    assert bad.returncode == 1 and "NOT_FOUND: link: no link w1 <-> w2" in bad.stderr
    bad = inart("ctl", "event", "link-load", "v1", "v2", "--server", server)
    assert bad.returncode != 0 and "expected A B LOAD" in bad.stderr


def test_replan_bench_prints_one_line_per_figure(tmp_path) -> None:
    out = tmp_path / "bench.json"
    proc = inart("bench", "controller", "--parts", "replan", "--replan-switches", "memory",
                 "--replan-topologies", "fig1", "--events", "1", "--quiet", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    (figure,) = json.loads(out.read_text())["replan"]
    assert figure["name"] == "controller.replan[fig1]" and figure["unit"] == "s"
    assert figure["goal"] == 1.0 and figure["ratio"] == pytest.approx(figure["value"], abs=1e-3)
    assert [s["event"] for s in figure["samples"]] == ["link-down", "link-up"]
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("controller.")]
    assert line.startswith("controller.replan[fig1]") and "goal <= 1 s, ratio" in line


def test_watch_timeout_ends_a_quiet_stream(server: str) -> None:
    t0 = time.monotonic()
    proc = inart("ctl", "watch", "--server", server, "--timeout", "1", timeout=60)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert time.monotonic() - t0 < 30  # no message came: the timeout still ended it
    bad = inart("ctl", "watch", "--server", server, "--timeout", "-1")
    assert bad.returncode == 2 and "expected a number of seconds > 0" in bad.stderr
    assert "--timeout-s" not in inart("ctl", "jobs", "--help").stdout


def test_topology_without_switch_addresses_guesses_none(server: str) -> None:
    proc = inart("ctl", "topology", "fattree:4", "--server", server)
    assert proc.returncode == 2 and "no P4Runtime address for switch(es)" in proc.stderr
    port = server.rpartition(":")[2]
    own = inart("ctl", "topology", "fig1", "--server", server, "--switch",
                f"v1=localhost:{port}", "--switch", "v2=127.0.0.1:50902")
    assert own.returncode == 2 and "is the service's own address" in own.stderr
    base = int(port) - 1  # v1 would land on the service's port
    clash = inart("ctl", "topology", "fig1", "--server", server, "--grpc-base", str(base))
    assert clash.returncode == 2 and "switch v1" in clash.stderr
    assert ctl(server, "topology")["topology_json"] == ""  # nothing was registered


def test_serve_refuses_a_bad_listen_address_without_a_traceback(tmp_path) -> None:
    proc = inart("serve", "--listen", "127.0.0.1:²", "--state", str(tmp_path),
                 "--switches", "memory", timeout=60)
    assert proc.returncode == 2 and "expected HOST:PORT with a port" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
