"""`inart emulate --cli` and `--keep-up`: the network stays up after the runs, with the plan
installed, until the user is done; `inart shell SWITCH` reaches a switch meanwhile; then the
network is torn down as after a plain run (no switch interface, no process, no state file).

Run under the network lock: ``flock /tmp/inart-net.lock pytest tests/emulation/...``.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.model.topologies import fig1
from control_plane.repo import REPO, child_env
from emulation.network.mininet_net import leftovers
from emulation.runs.emulate import STATE_FILE
from tests.emulation.test_emulation_network import _descendants

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet_and_program")]
EMULATE = [sys.executable, "-m", "control_plane.cli", "emulate", "--topology", "fig1",
           "--scheme", "inart", "--rounds", "1", "--values", str(32 * 200), "--quiet"]
ROUTES = ("print('routes', len(list(TableEntry('InaIngress.route_dst').read())), 'events', "
          "sum(c.packet_count for c in CounterEntry('InaIngress.events').read()))")


def shell_on(switch: str) -> list[str]:
    return [sys.executable, "-m", "control_plane.cli", "shell", switch, "-c", ROUTES]


def routes_and_events(out: str) -> tuple[int, int]:
    words = out[out.index("routes "):].split()
    return int(words[1]), int(words[3])


def test_cli_runs_commands_then_tears_down(tmp_path):
    commands = f"pingall\nsh {shlex.join(shell_on('v2'))}\nexit\n"
    proc = subprocess.run([*EMULATE, "--cli", "--out", str(tmp_path)], input=commands,
                          capture_output=True, text=True, cwd=REPO, env=child_env(),
                          timeout=400)
    print(proc.stdout[-3000:], proc.stderr[-3000:])
    assert proc.returncode == 0, proc.stderr
    assert "network up: fig1, the inart plan installed" in proc.stdout
    assert "Results: 0% dropped (56/56 received)" in proc.stderr  # Mininet logs to stderr
    routes, events = routes_and_events(proc.stdout)
    assert routes > 0 and events > 0  # v2 holds the plan and counted the run's packets
    assert (tmp_path / "emulate.json").exists()
    assert leftovers(fig1().switches, []) == []
    assert not STATE_FILE.exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_keep_up_until_a_signal(tmp_path, sig):
    proc = subprocess.Popen([*EMULATE, "--keep-up", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO, env=child_env())
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Ctrl-C tears the network down"):
                break
        assert any(x.startswith("network up: fig1") for x in lines), "".join(lines)
        pids = _descendants(proc.pid)
        state = json.loads(STATE_FILE.read_text())
        assert sorted(state["switches"]) == ["v1", "v2"]
        shell = subprocess.run(shell_on("v1"), capture_output=True, text=True, cwd=REPO,
                               env=child_env(), timeout=120)
        assert shell.returncode == 0, shell.stderr
        routes, events = routes_and_events(shell.stdout)
        assert routes > 0 and events > 0
        assert proc.poll() is None  # still up after the shell left
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "tearing the network down" in err and "wrote" in out
    assert leftovers(fig1().switches, pids) == []
    assert not STATE_FILE.exists()
    assert Path(tmp_path / "emulate.json").exists()


def test_cli_and_keep_up_refuse_a_scale_search(tmp_path):
    proc = subprocess.run([*EMULATE, "--keep-up", "--find-max-scale", "0.1,0.2", "--out",
                           str(tmp_path)], capture_output=True, text=True, cwd=REPO,
                          env=child_env(), timeout=60)
    assert proc.returncode == 2 and "not with --find-max-scale" in proc.stderr
