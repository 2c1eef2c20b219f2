"""An emulation runs from any directory, on ports nobody holds, beside another emulation.

`inart emulate` is run as a user runs it: a process started in a directory of its own (not
the checkout), whose outputs land under that directory's out/.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.model.topologies import fig1
from control_plane.repo import child_env
from control_plane.solver.solve import plan_for
from emulation.runs.emulate import Emulation
from host_stack.train.hostrun import TrafficConfig

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet_and_program")]
QUICK = ("--rounds", "1", "--values", "1500", "--quiet")  # the smallest run that checks sums


def emulate(cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "control_plane.cli", "emulate", *args,
                             *QUICK], cwd=cwd, env=child_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finished(proc: subprocess.Popen, cwd: Path) -> list[dict]:
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    rows = json.loads((cwd / "out" / "emulate" / "emulate.json").read_text())
    assert rows and all(r["exact"] is True for r in rows), rows
    return rows


def test_emulate_from_a_directory_outside_the_repository(tmp_path) -> None:
    """Its children (switch farm, hosts' processes) run there too; a directory there named
    like one of the packages must not shadow it (child_env's PYTHONSAFEPATH)."""
    (tmp_path / "emulation").mkdir()
    (tmp_path / "emulation" / "__init__.py").write_text("raise ImportError('shadowed')\n")
    finished(emulate(tmp_path, "-t", "fig1"), tmp_path)
    assert (tmp_path / "out" / "emulate" / "logs" / "v1.log").is_file()


def test_an_emulation_runs_while_another_process_holds_the_old_fixed_ports(tmp_path) -> None:
    """Switches used to take 127.0.0.1:50051 upwards and refused to start beside a holder."""
    held = []
    for port in (50051, 50052, 50053):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
            held.append(s)
        except OSError:  # someone else holds it already: as good for this test
            s.close()
    try:
        topo = fig1()
        with Emulation(topo, tmp_path, quiet=True) as emu:
            assert not {emu.addr.grpc_address(sw) for sw in topo.switches} & {
                f"127.0.0.1:{p}" for p in (50051, 50052, 50053)}
            plan = plan_for(topo, "inart", 0)
            cfg = TrafficConfig(rounds=1, values=1500, unit_bps=emu.unit_bps, deadline_s=120)
            row = emu.run(plan, emu.install(plan), cfg, "inart").row
        assert row["exact"] is True
    finally:
        for s in held:
            s.close()


def test_two_emulations_with_different_switch_names_run_at_once(tmp_path) -> None:
    """fig1 (switches v1, v2) beside the same cluster with its switches renamed (a1, a2)."""
    doc = json.dumps(fig1().to_dict()).replace('"v1"', '"a1"').replace('"v2"', '"a2"')
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "renamed.yaml").write_text(doc)  # JSON is YAML
    one = emulate(tmp_path, "-t", "fig1")
    two = emulate(tmp_path / "two", "-t", "renamed.yaml")
    rows = finished(one, tmp_path) + finished(two, tmp_path / "two")
    assert [r["topology"] for r in rows] == ["fig1", "renamed"]
