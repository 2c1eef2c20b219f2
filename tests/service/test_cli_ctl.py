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
    proc = inart("ctl", *args, "--address", server, "--json")
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
    watched = inart("ctl", "watch", "--address", server, "--count", "3", "--json")
    lines = [json.loads(x) for x in watched.stdout.splitlines()]
    assert len(lines) == 3 and all("seq" in x for x in lines)
    text = inart("ctl", "jobs", "--address", server).stdout
    assert "job 1 degraded" in text and "cut off: w1" in text
    assert ctl(server, "cancel", "1")["state"] == "JOB_STATE_CANCELLED"
    bad = inart("ctl", "event", "link-down", "w1", "w2", "--address", server)
    assert bad.returncode == 1 and "NOT_FOUND: link: no link w1 <-> w2" in bad.stderr
    bad = inart("ctl", "event", "link-load", "v1", "v2", "--address", server)
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
    proc = inart("ctl", "watch", "--address", server, "--timeout", "1", timeout=60)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert time.monotonic() - t0 < 30  # no message came: the timeout still ended it
    bad = inart("ctl", "watch", "--address", server, "--timeout", "-1")
    assert bad.returncode == 2 and "expected a number of seconds > 0" in bad.stderr
    assert "--timeout-s" not in inart("ctl", "jobs", "--help").stdout


def test_topology_without_switch_addresses_guesses_none(server: str) -> None:
    proc = inart("ctl", "topology", "fig1", "--address", server, "--switch", "v1=127.0.0.1:50901")
    assert proc.returncode == 2 and "no P4Runtime address for switch(es) v2" in proc.stderr
    port = server.rpartition(":")[2]
    own = inart("ctl", "topology", "fig1", "--address", server, "--switch",
                f"v1=localhost:{port}", "--switch", "v2=127.0.0.1:50902")
    assert own.returncode == 2 and "is the service's own address" in own.stderr
    assert ctl(server, "topology")["topology_json"] == ""  # nothing was registered


def test_serve_refuses_a_bad_listen_address_without_a_traceback(tmp_path) -> None:
    proc = inart("serve", "--listen", "127.0.0.1:²", "--state", str(tmp_path),
                 "--switches", "memory", timeout=60)
    assert proc.returncode == 2 and "expected HOST:PORT with a port" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_topology_without_switches_takes_the_running_emulations_addresses(tmp_path) -> None:
    """No fixed default ports: the addresses come from the emulation's state file, and
    without one (or with other switch names) the refusal says what to give instead."""
    from control_plane.cli.ctl import emulation_switches
    from control_plane.model.topologies import fig1
    from control_plane.model.topology import TopologyError

    state = tmp_path / "inart-emulation.json"
    with pytest.raises(TopologyError, match=r"no running emulation .*--switch NAME=HOST:PORT"):
        emulation_switches(fig1(), state)
    state.write_text(json.dumps({"switches": {"v1": {"grpc": "127.0.0.1:41001",
                                                     "device_id": 1}}}))
    with pytest.raises(TopologyError, match=r"switch\(es\) v2 are not in the running"):
        emulation_switches(fig1(), state)
    state.write_text(json.dumps({"switches": {
        sw: {"grpc": f"127.0.0.1:{41000 + i}", "device_id": i} for i, sw in
        enumerate(["v1", "v2", "x9"], 1)}}))
    assert emulation_switches(fig1(), state) == {"v1": ("127.0.0.1:41001", 1),
                                                 "v2": ("127.0.0.1:41002", 2)}


def test_serve_on_a_taken_port_names_the_holder(tmp_path) -> None:
    import os
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        address = f"127.0.0.1:{held.getsockname()[1]}"
        proc = inart("serve", "--switches", "memory", "--listen", address, "--state",
                     str(tmp_path), timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert f"cannot listen on {address}: in use by pid {os.getpid()} (" in proc.stdout
    assert "Traceback" not in proc.stderr
