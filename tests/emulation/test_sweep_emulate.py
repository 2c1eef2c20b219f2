"""The sweep's emulate kind: emulation points on Ray, one per machine, each under the network
lock, which the points take themselves unless their sweep (a process they descend from: run
this module under `flock /tmp/inart-net.lock`) holds it; the cluster setting, checked when the
sweep starts and passed to every point's emulation."""

from __future__ import annotations

import contextlib
import fcntl
import subprocess
import sys
from types import SimpleNamespace

import pytest
import yaml

from control_plane.deploy.addressing import assign
from control_plane.sweep.cluster import LocalHead
from control_plane.sweep.engine import run_sweep
from control_plane.sweep.grid import GridError, build_grid
from control_plane.sweep.kinds import KINDS
from control_plane.sweep.results import OK
from emulation.cluster.run import Cluster
from emulation.cluster.spec import ClusterSpec
from emulation.runs import sweep_kind
from emulation.runs.sweep_kind import net_lock

QUICK = {"rounds": 1, "values": 1500}  # the smallest run that checks sums
SERVERS = {"schema": "inart.cluster/1",
           "servers": {"a": {"address": "192.0.2.10"}, "b": {"address": "192.0.2.11"}}}


def emulate_grid(settings: dict) -> dict:
    return build_grid({"kind": "emulate", "topologies": "fig1", "schemes": "inart",
                       "settings": settings}, KINDS).settings


def test_a_held_lock_fails_the_point_naming_its_holder(tmp_path) -> None:
    lock = tmp_path / "net.lock"
    hold = ("import fcntl, sys, time\n"
            "f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(lock)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(TimeoutError, match=f"still held after 0.5 s by pid {holder.pid} "
                                               r"\(.*python.* -c import fcntl"):
            with net_lock(0.5, lock):
                pass
    finally:
        holder.kill()
        holder.wait()
    with net_lock(5, lock):  # free again
        pass


def test_a_lock_held_by_an_ancestor_is_run_under(tmp_path) -> None:
    """`flock LOCK inart sweep ...`: the sweep's own points (its descendants) do not wait for
    the lock their sweep holds."""
    lock = tmp_path / "net.lock"
    child = ("import sys\nfrom pathlib import Path\n"
             "from emulation.runs.sweep_kind import net_lock\n"
             "with net_lock(0.5, Path(sys.argv[1])):\n    print('ran')")
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        proc = subprocess.run([sys.executable, "-c", child, str(lock)], capture_output=True,
                              text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "ran\n"), proc.stderr[-2000:]


def test_cluster_setting_checked_when_the_sweep_starts(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "servers.yaml").write_text(yaml.safe_dump(SERVERS))
    # relative to where the sweep starts; the points run in Ray workers elsewhere
    assert emulate_grid({"cluster": "servers.yaml"}) == {"cluster": str(tmp_path /
                                                                         "servers.yaml")}
    (tmp_path / "bad.yaml").write_text("servers: [\n")
    (tmp_path / "pinned.yaml").write_text(yaml.safe_dump({**SERVERS, "placement": {"v9": "a"}}))
    for value, error in [
            ("missing.yaml", r"settings: cluster: servers file .*missing.yaml: cannot read it"),
            ("bad.yaml", r"settings: cluster: servers file .*bad.yaml: not valid YAML"),
            ("pinned.yaml", r"settings: cluster: servers file .*pinned.yaml: placement.v9: the "
                            r"topology fig1 has no node 'v9'"),
            (3, r"settings: cluster: 3: expected the path of a servers file")]:
        with pytest.raises(GridError, match=error):
            emulate_grid({"cluster": value})
    with pytest.raises(GridError, match=r"settings: cluster: not for kind plan"):
        build_grid({"kind": "plan", "topologies": "fig1", "schemes": "inart",
                    "settings": {"cluster": "servers.yaml"}}, KINDS)


class FakeEmulation:
    """What sweep_kind.run uses of an Emulation; keeps what it was built with."""

    built: dict = {}

    def __init__(self, topo, out, target, scale, quiet, cluster=None) -> None:
        FakeEmulation.built = {"cluster": cluster, "scale": scale}
        self.unit_bps = scale * 1e6
        self.net = SimpleNamespace(cluster=None)
        if cluster is not None:
            self.net.cluster = Cluster(cluster, topo, assign(topo))
            self.net.cluster.tunnels = SimpleNamespace(  # what start() would have made
                made=[("v1", "v2", "vxlan", "VXLAN VNI 7 UDP 4789", 1450)])

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def install(self, plan) -> None:
        return None

    def run(self, plan, compiled, cfg, scheme):
        return SimpleNamespace(row={"scheme": scheme, "exact": True, "wall_s": 1.0,
                                    "rate_mbps": 0.5, "comm_s": 2.0, "plan_comm_s": 1.9})


def test_cluster_setting_reaches_the_emulation(tmp_path, monkeypatch) -> None:
    (tmp_path / "servers.yaml").write_text(yaml.safe_dump(SERVERS))
    settings = emulate_grid({"cluster": str(tmp_path / "servers.yaml"), **QUICK})
    monkeypatch.setattr(sweep_kind, "Emulation", FakeEmulation)
    monkeypatch.setattr(sweep_kind, "net_lock", lambda timeout: contextlib.nullcontext())
    point = {"kind": "emulate", "topology": "fig1", "scheme": "inart", "link_gbps": None,
             "model": None, "seed": 0}
    row = sweep_kind.run(point, settings, str(tmp_path / "point"))
    spec = FakeEmulation.built["cluster"]
    assert isinstance(spec, ClusterSpec) and sorted(spec.servers) == ["a", "b"]
    assert row["cluster"] == str(tmp_path / "servers.yaml")
    assert row["placement"] == "a: v1 w1 w2 w3 w4; b: v2 w5 w6 s1 s2"
    assert row["tunnels"] == "v1-v2: a <-> b over VXLAN VNI 7 UDP 4789 (MTU 1450)"
    assert row["exact"] is True and row["rate_units"] == pytest.approx(2.5)
    sweep_kind.run(point, QUICK, str(tmp_path / "alone"))  # no setting: on this machine
    assert FakeEmulation.built["cluster"] is None


@pytest.mark.root
@pytest.mark.slow
def test_emulation_points_on_ray(needs_mininet_and_program, tmp_path) -> None:
    grid = build_grid({"kind": "emulate", "topologies": "fig1", "schemes": "inart,lbmm",
                       "settings": QUICK}, KINDS)
    with LocalHead(cpus=2) as address:
        outcome = run_sweep(grid, tmp_path, address=address, progress=False)
    assert [r["status"] for r in outcome.rows] == [OK, OK], outcome.rows
    for row in outcome.rows:
        assert row["exact"] is True and row["rounds"] == 1
        assert row["comm_time_s"] > 0 and row["rate_per_worker_bps"] > 0
    assert outcome.rows[0]["rate_units"] == pytest.approx(2.5)
