"""The servers file of `inart emulate --cluster`, the placement policy and the server checks'
findings, without any server."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from control_plane.deploy.addressing import assign
from control_plane.model.topologies import build_topology
from emulation.cluster.checks import parse_facts, problems_of
from emulation.cluster.placement import crossing, place
from emulation.cluster.run import Cluster
from emulation.cluster.spec import ClusterSpecError, load, parse
from host_stack.remote.launchers import SshProcess

PATH = Path("servers.yaml")
GOOD = {"schema": "inart.cluster/1", "ssh": {"user": "root", "key": "/k"},
        "servers": {"a": {"address": "192.0.2.10"},
                    "b": {"address": "192.0.2.11", "tunnel_address": "198.51.100.11"}}}


def doc(**changes) -> dict:
    return {**GOOD, **changes}


def test_a_good_file():
    spec = parse(PATH, doc(links={"v1-v2": "ssh"}, placement={"v2": "a"}))
    assert spec.servers["b"].tunnel_address == "198.51.100.11"
    assert spec.servers["a"].tunnel_address == "192.0.2.10"
    assert spec.servers["a"].ssh.key == "/k" and spec.servers["b"].ssh.user == "root"
    assert spec.tunnel_of("v2", "v1") == "ssh" and spec.tunnel_of("v1", "w1") == "vxlan"


@pytest.mark.parametrize("changes, message", [
    ({"schema": "x"}, r"schema: 'x': expected inart.cluster/1"),
    ({"servers": {}}, r"servers: expected a mapping of server name"),
    ({"servers": {"a": {"address": "host.example"}}}, r"servers.a.address: 'host.example': "
                                                      r"expected an IPv4 address"),
    ({"servers": {"a": {"address": "192.0.2.1", "cpu": 2}}}, r"servers.a.cpu: unknown field"),
    ({"servers": {"a": {"address": "192.0.2.1"}, "b": {"address": "192.0.2.1"}}},
     r"servers.b.address: 192.0.2.1:22 is server 'a' too"),
    ({"tunnel": "gre"}, r"tunnel: 'gre': GRE \(gretap\) is missing"),
    ({"tunnel": "l2tp"}, r"tunnel: 'l2tp': expected one of vxlan, ssh"),
    ({"links": {"v1": "ssh"}}, r"links.v1: expected two node ids joined by '-'"),
    ({"placement": {"v1": "c"}}, r"placement.v1: 'c': expected one of the servers \(a, b\)"),
    ({"ssh": {"port": 0}}, r"servers file servers.yaml: ssh.port: 0: expected an integer"),
])
def test_bad_files_name_the_field(changes, message):
    with pytest.raises(ClusterSpecError, match=message):
        parse(PATH, doc(**changes))


def test_entries_must_be_nodes_and_links_of_the_topology():
    topo = build_topology("fig1")
    with pytest.raises(ClusterSpecError, match=r"placement.x9: the topology fig1 has no node"):
        parse(PATH, doc(placement={"x9": "a"})).check_topology(topo)
    with pytest.raises(ClusterSpecError, match=r"links.v1-w5: not a link of fig1"):
        parse(PATH, doc(links={"v1-w5": "ssh"})).check_topology(topo)


def test_unreadable_file(tmp_path):
    with pytest.raises(ClusterSpecError, match="cannot read it"):
        load(tmp_path / "missing.yaml")


def test_hosts_follow_their_tor_and_switches_balance():
    topo = build_topology("fig1")
    where = place(topo, assign(topo), parse(PATH, GOOD))
    assert {n for n, s in where.items() if s == "a"} == {"v1", "w1", "w2", "w3", "w4"}
    assert {n for n, s in where.items() if s == "b"} == {"v2", "w5", "w6", "s1", "s2"}


def test_pins_win_and_a_pinned_switch_takes_its_hosts():
    topo = build_topology("fig1")
    where = place(topo, assign(topo), parse(PATH, doc(placement={"v1": "b", "w6": "b"})))
    assert where["v1"] == where["w1"] == "b" and where["v2"] == where["s1"] == "a"
    assert where["w6"] == "b"


def test_fattree_load_is_even_and_edges_keep_their_hosts():
    topo = build_topology("fattree:4")
    addr = assign(topo)
    where = place(topo, addr, parse(PATH, GOOD))
    load = {s: sum(1 for n in where.values() if n == s) for s in ("a", "b")}
    assert abs(load["a"] - load["b"]) <= 1, load
    assert all(where[h] == where[addr.tor[h]] for h in topo.workers + topo.pss)


@pytest.mark.parametrize(("topology", "servers", "tunnels"),
                         [("fattree:4", 2, 8), ("fattree:4", 3, 12), ("fattree:8", 2, 64)])
def test_trades_halve_the_tunnels_and_keep_the_balance(topology, servers, tunnels):
    """fattree:4 over two servers: one plane of aggregation and core switches on each (their
    edges split evenly), 8 tunnels; the greedy pass alone left 16 (and 20, 128)."""
    topo = build_topology(topology)
    addr = assign(topo)
    spec = parse(PATH, doc(servers={n: {"address": f"192.0.2.{10 + i}"}
                                    for i, n in enumerate("abc"[:servers])}))
    where = place(topo, addr, spec)
    assert len(crossing(topo, where)) == tunnels
    load = [sum(1 for n in where.values() if n == s) for s in spec.servers]
    assert max(load) - min(load) <= 1, load
    assert all(where[h] == where[addr.tor[h]] for h in topo.workers + topo.pss)


def test_pinned_switches_never_trade():
    topo = build_topology("fattree:4")
    pins = {"e1": "a", "e2": "a", "a2": "b"}
    where = place(topo, assign(topo), parse(PATH, doc(placement=pins)))
    assert all(where[n] == s for n, s in pins.items())


def test_each_missing_requirement_is_named():
    facts = parse_facts("uid=1000\nmnexec=missing\npython=missing\nrepo=ok\nmininet=2.2.0\n"
                        "marker=missing\nvxlan=missing\nport=busy\n")
    lines = problems_of("a", facts, "2.3.0", "/venv/bin/python", "/repo",
                        Path("/out/.cluster-t"), "t", 4789)
    text = "\n".join(lines)
    assert len(lines) == 7, text
    for expected in ("passwordless sudo", "mnexec not found", "/venv/bin/python missing",
                     "Mininet '2.2.0'", "/out is not shared", "VXLAN devices",
                     "UDP port 4789"):
        assert expected in text
    ok = parse_facts("uid=0\nmnexec=/usr/bin/mnexec\npython=ok\nrepo=ok\nmininet=2.3.0\n"
                     "marker=t\nvxlan=ok\nport=free\n")
    assert problems_of("a", ok, "2.3.0", "/p", "/r", Path("/out/.cluster-t"), "t", 4789) == []


class FakeLauncher:
    """Signals local processes by "pidfile" (here: the pid), recording each SSH command."""

    def __init__(self) -> None:
        self.commands: list[tuple[list[str], str]] = []

    def signal_all(self, pidfiles: list[str], sig: str) -> None:
        self.commands.append((pidfiles, sig))
        for pid in pidfiles:
            os.kill(int(pid), getattr(signal, f"SIG{sig}"))


def test_stopping_signals_each_servers_processes_in_one_command():
    """Switches and workers end with one SSH command per server, not one each."""
    topo = build_topology("fig1")
    cluster = Cluster(parse(PATH, GOOD), topo, assign(topo))
    launchers = [FakeLauncher(), FakeLauncher()]
    procs = []
    for i in range(5):
        proc = SshProcess(launchers[i % 2], "", ["sleep", "60"])
        proc.pidfile = str(proc.pid)
        procs.append(proc)
    started = time.monotonic()
    cluster.terminate([*procs, subprocess.Popen(["true"])])  # local ones: not its business
    assert time.monotonic() - started < 5
    assert [len(f.commands) for f in launchers] == [1, 1]
    assert sorted(len(f.commands[0][0]) for f in launchers) == [2, 3]
    assert all(p.returncode == -signal.SIGTERM for p in procs)
