"""The Mininet network: built from a topology, shaped, and torn down without leftovers.

Teardown is checked after a normal exit, after an exception inside the run, and after
SIGINT (Ctrl-C) and SIGTERM to a process that holds a running network: no switch process,
host process, switch interface or nftables table may survive.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from control_plane.deploy.addressing import assign
from control_plane.deploy.transaction import DEFAULT_ELECTION_ID, addressed_switches, open_client
from control_plane.model.topologies import fig1
from emulation.network.link_impair import LinkImpairment, hold_names
from emulation.network.mininet_net import Network, NetworkError, leftovers, queue_for
from emulation.network.switch_claims import impair_table

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet")]



def _nft_tables() -> str:
    res = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True)
    return "\n".join(t for t in res.stdout.splitlines() if "inart_" in t)


def test_network_comes_up_shaped_and_goes_away(tmp_path):
    topo = fig1()
    addr = assign(topo)
    queue = queue_for(len(topo.workers), len(topo.pss), 32)
    assert queue == 6 * 2 * 32  # every (worker, PS) stream's window fits
    with Network(topo, addr, tmp_path, scale=0.5, impair=LinkImpairment(loss=1.0),
                 queue_packets=queue) as net:
        pids = [sw.switch.proc.pid for sw in net.net.switches]
        # the switch's P4Runtime server answers (and takes a primary session)
        client = open_client(addressed_switches(addr)["v1"], DEFAULT_ELECTION_ID, 15.0)
        client.close()
        sleeper = net.popen("w1", ["sleep", "600"])
        pids.append(sleeper.pid)
        out = net.popen("w1", ["ip", "-br", "addr"]).communicate(timeout=10)[0].decode()
        assert addr.ip["w1"] in out
        to_s1 = f"v2-eth{addr.port[('v2', 's1')]}"
        tc = subprocess.run(["tc", "class", "show", "dev", to_s1], capture_output=True,
                            text=True).stdout
        # v2 -> s1 is capped at the PS's ingress B(s)=4 units, not the link's 6
        assert "rate 2Mbit" in tc, tc
        to_v1 = f"v2-eth{addr.port[('v2', 'v1')]}"
        assert "rate 3Mbit" in subprocess.run(["tc", "class", "show", "dev", to_v1],
                                              capture_output=True, text=True).stdout
        assert f"limit {queue}p" in subprocess.run(["tc", "qdisc", "show", "dev", to_v1],
                                                   capture_output=True, text=True).stdout
        assert "v1_eth1" in _nft_tables()
    assert leftovers(topo.switches, pids) == []
    assert _nft_tables() == ""


def test_impairment_only_on_the_chosen_links(tmp_path):
    topo = fig1()
    addr = assign(topo)
    imp = LinkImpairment(loss=1.0, dup=1.0, reorder=5.0, links=(("s1", "v2"),))
    switch_end = f"v2-eth{addr.port[('v2', 's1')]}"
    with Network(topo, addr, tmp_path, impair=imp) as net:
        tables = _nft_tables()
        assert impair_table(switch_end) in tables  # switch end of v2-s1
        assert tables.count("table netdev") == 1, tables  # no other switch interface
        for host, impaired in (("s1", True), ("w1", False)):  # hosts' ends, in their namespaces
            out = net.popen(host, ["nft", "list", "tables"]).communicate(timeout=10)[0]
            assert (impair_table(f"{host}-eth0") in out.decode()) == impaired, (host, out)
            links = net.popen(host, ["ip", "-br", "link"]).communicate(timeout=10)[0].decode()
            assert (hold_names(f"{host}-eth0")[1] in links) == impaired, links
        # the root namespace's hold line serves the switch end, s1's its own end
        assert Path(f"/sys/class/net/{hold_names(switch_end)[1]}").exists()
        assert sorted(p.name for p in tmp_path.glob("hold_line-*.log")) == \
            ["hold_line-s1.log", "hold_line-v1.log"]
        assert net.impairment_counts().keys() == {"dropped", "held", "duplicated"}
        lines = [proc.pid for proc in net._hold_procs]
    assert _nft_tables() == ""
    assert not Path(f"/sys/class/net/{hold_names(switch_end)[0]}").exists()
    assert leftovers(topo.switches, lines) == []
    for log in tmp_path.glob("hold_line-*.log"):  # each line said what it did, and stopped
        text = log.read_text()
        assert text.splitlines()[-1].startswith('{"held": '), text


def test_impairment_is_refused_with_a_reason_before_anything_starts(tmp_path):
    with pytest.raises(NetworkError, match="impaired links s1-w1: not links of fig1"):
        Network(fig1(), assign(fig1()), tmp_path,
                impair=LinkImpairment(loss=1.0, links=(("w1", "s1"),)))


def test_exception_inside_the_run_still_tears_down(tmp_path):
    topo = fig1()
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="boom"), \
            Network(topo, assign(topo), tmp_path) as net:
        pids += [sw.switch.proc.pid for sw in net.net.switches]
        pids.append(net.popen("s1", ["sleep", "600"]).pid)
        raise RuntimeError("boom")
    assert leftovers(topo.switches, pids) == []


HOLDER = """
import faulthandler, json, signal, sys, time
faulthandler.register(signal.SIGUSR1, all_threads=True)  # where a stuck teardown waits
from pathlib import Path
from control_plane.model.topologies import fig1
from control_plane.deploy.addressing import assign
from emulation.network.link_impair import LinkImpairment
from emulation.network.mininet_net import Network
topo = fig1()
try:
    imp = LinkImpairment(loss=1.0, dup=1.0, reorder=5.0)  # hold lines to stop too
    with Network(topo, assign(topo), Path(sys.argv[1]), impair=imp) as net:
        pids = [sw.switch.proc.pid for sw in net.net.switches]
        pids.append(net.popen("w2", ["sleep", "600"]).pid)
        print(json.dumps(pids), flush=True)
        time.sleep(600)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def _holder(out: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def _descendants(pid: int) -> list[int]:
    """Every live process under ``pid`` (Mininet's host shells, the switch farm, ...)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_tears_down(tmp_path, sig):
    proc = _holder(tmp_path)
    try:
        pids = json.loads(proc.stdout.readline())
        time.sleep(0.5)
        proc.send_signal(sig)
        try:
            rest = proc.communicate(timeout=120)[0]
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)  # the holder's stacks, for the failure message
            time.sleep(2)
            proc.kill()
            pytest.fail(f"teardown after {sig.name} took > 120 s; holder's stacks:\n"
                        f"{proc.communicate()[1]}")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "interrupted" in rest
    assert proc.returncode == 0
    assert leftovers(fig1().switches, pids) == []
    assert _nft_tables() == ""


def test_a_refused_pipeline_names_the_switch_and_stops_cleanly(tmp_path):
    from control_plane.deploy.pipeline import Pipeline
    from control_plane.deploy.transaction import DeployError
    from control_plane.solver.solve import solve
    from emulation.runs.emulate import STATE_FILE, Emulation

    p4info, config = tmp_path / "empty.p4info.txt", tmp_path / "garbage.json"
    p4info.write_text("")  # a valid, empty P4Info
    config.write_text("{not json")
    topo = fig1()
    pids: list[int] = []
    # an empty P4Info has none of the plan's tables: refused before any switch is written
    with pytest.raises(DeployError, match=r"switch 'v1': cannot build .*nothing was written"), \
            Emulation(topo, tmp_path / "out", program=Pipeline(p4info, config),
                      quiet=True) as emu:
        pids += [sw.switch.proc.pid for sw in emu.net.net.switches]
        assert STATE_FILE.exists()
        emu.install(solve(topo, "lbmm", 0))
    assert leftovers(topo.switches, pids) == []
    assert not STATE_FILE.exists()


def test_a_live_run_is_refused_and_a_killed_runs_interfaces_are_removed(tmp_path):
    topo = fig1()
    proc = _holder(tmp_path / "killed")
    orphans: list[int] = []
    try:
        json.loads(proc.stdout.readline())
        with pytest.raises(NetworkError, match=r"switch names v1, .* in use by another"), \
                Network(topo, assign(topo), tmp_path / "refused"):
            pass
        assert any(p.startswith("interface v1-eth") for p in leftovers(topo.switches, []))
        orphans = _descendants(proc.pid)
        proc.kill()  # no teardown at all: its interfaces stay behind
        proc.wait()
        _kill_all(orphans)  # (some die with their parent)
        assert leftovers(topo.switches, []) != []
        with Network(topo, assign(topo), tmp_path / "next") as net:
            assert net.interface_bytes()
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_all(orphans)
    assert leftovers(topo.switches, []) == []
