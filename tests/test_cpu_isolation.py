"""CPU isolation of switches from hosts with cgroups: which hierarchy, what weights, a clear
refusal where the CPU controller is missing, and (as root, where a hierarchy is here) real
groups that hold the processes and are removed afterwards."""

from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

import pytest

from emulation.network import cpu_isolation
from emulation.network.cpu_isolation import (
    CpuIsolation,
    Hierarchy,
    IsolationError,
    find_hierarchy,
    switch_weight,
)
from emulation.runs.emulate import Emulation

V2_CPU = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n"
HYBRID = ("tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n"
          "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
          "cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n"
          "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n")
V2_NO_CPU = "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"


def test_v2_is_used_where_it_offers_the_cpu_controller():
    h = find_hierarchy(V2_CPU, read=lambda p: "cpuset cpu io memory pids\n")
    assert h == Hierarchy(2, Path("/sys/fs/cgroup"))
    assert (h.weight_file(), h.weight_value(800), h.weight_value(20000)) == (
        "cpu.weight", "800", "10000")


def test_hybrid_mounts_fall_back_to_the_v1_cpu_hierarchy():
    h = find_hierarchy(HYBRID, read=lambda p: "hugetlb\n")
    assert h == Hierarchy(1, Path("/sys/fs/cgroup/cpu"))
    assert (h.weight_file(), h.weight_value(100), h.weight_value(800)) == (
        "cpu.shares", "1024", "8192")


def test_no_cpu_controller_is_refused_saying_what_is_missing():
    with pytest.raises(IsolationError) as err:
        find_hierarchy(V2_NO_CPU, read=lambda p: "hugetlb\n")
    text = str(err.value)
    assert "'cpu' controller" in text and "offers only 'hugetlb'" in text
    assert "--switch-cpu-weight" in text


@pytest.mark.parametrize("text", ["0", "10001", "heavy"])
def test_bad_weights_are_refused_naming_the_option(text):
    with pytest.raises(argparse.ArgumentTypeError, match="--switch-cpu-weight"):
        switch_weight(text)


def test_an_emulation_without_the_controller_runs_on_and_says_why(tmp_path, monkeypatch,
                                                                   capsys):
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\n")
    monkeypatch.setattr(cpu_isolation, "MOUNTS", mounts)
    emu = Emulation.__new__(Emulation)  # isolate() fails before it needs the network
    emu.isolation, emu.isolation_note = None, "none"
    note = emu.isolate(800)
    assert note.startswith("unavailable: CPU isolation needs the cgroup 'cpu' controller")
    assert "running without CPU isolation" in capsys.readouterr().err
    assert emu.isolation is None


def _cpu_group(pid: int, hier: Hierarchy) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        num, controllers, path = line.split(":", 2)
        if (num == "0") if hier.version == 2 else "cpu" in controllers.split(","):
            return path
    return ""


def test_real_groups_hold_the_processes_and_their_children_then_go(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("cgroups need root")
    try:
        hier = find_hierarchy(cpu_isolation.MOUNTS.read_text())
    except IsolationError as exc:
        pytest.skip(str(exc))
    # a switch "farm" whose child was forked before isolation, and a host
    farm = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    host = subprocess.Popen(["sleep", "30"])
    try:
        for _ in range(50):
            kids = Path(f"/proc/{farm.pid}/task/{farm.pid}/children").read_text().split()
            if kids:
                break
            subprocess.run(["sleep", "0.1"])
        iso = CpuIsolation(800, name=f"inart-test-{os.getpid()}")
        note = iso.apply([farm.pid], [host.pid])
        assert note.startswith("switches weight 800 : hosts 100")
        base = "/" + str(iso.base.relative_to(hier.root))
        assert _cpu_group(farm.pid, hier) == f"{base}/switches"
        assert _cpu_group(int(kids[0]), hier) == f"{base}/switches"
        assert _cpu_group(host.pid, hier) == f"{base}/hosts"
        weights = {g: (iso.base / g / hier.weight_file()).read_text().strip()
                   for g in ("switches", "hosts")}
        assert weights == {"switches": hier.weight_value(800), "hosts": hier.weight_value(100)}
        iso.release()
        assert not iso.base.exists()
        assert _cpu_group(farm.pid, hier) == _cpu_group(os.getpid(), hier)
    finally:
        for p in (farm, host):
            p.kill()
            p.wait()
