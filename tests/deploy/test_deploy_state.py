"""The install layer without switches: comparing entries, parsing --switch / --election-id,
and `inart install --dry-run` (entries, port mapping, host addresses)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from control_plane.deploy.addressing import assign
from control_plane.deploy.pipeline import pipeline_for
from control_plane.deploy.state import desired_items, diff, group_item, table_item
from control_plane.deploy.transaction import (
    DeployError,
    parse_election_id,
    parse_switch,
    switch_addresses,
)
from control_plane.drivers.p4runtime import P4Info, build_table_entry
from control_plane.model.topologies import fig1
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2


@pytest.fixture(scope="module")
def info() -> P4Info:
    return P4Info.load(pipeline_for("embedded").p4info)


def route(info: P4Info, addr: str, port: int) -> p4runtime_pb2.TableEntry:
    return build_table_entry(info, "InaIngress.route_dst", {"dst_addr": addr},
                             "InaIngress.set_next_hop",
                             {"port": port, "dst_mac": "02:00:00:00:00:01", "src_mac": 2})


def test_items_compare_by_value_not_by_encoding(info) -> None:
    canonical = route(info, "10.1.0.2/32", 3)
    padded = p4runtime_pb2.TableEntry()
    padded.CopyFrom(canonical)
    padded.match[0].lpm.value = b"\x0a\x01\x00\x02"
    for p in padded.action.action.params:
        p.value = p.value.rjust(6, b"\x00")  # a server may pad values to the full width
    a, b = table_item(info, canonical), table_item(info, padded)
    assert (a.key, a.value) == (b.key, b.value)
    assert group_item(1, [(2, 1), (1, 2)]) == group_item(1, [(1, 2), (2, 1)])
    assert "route_dst[dst_addr=10.1.0.2/32] -> InaIngress.set_next_hop(port=3, " \
           "dst_mac=02:00:00:00:00:01, src_mac=00:00:00:00:00:02)" in a.what


def test_values_read_back_are_written_by_their_type_as_a_plan_writes_them(info) -> None:
    """An aggregation entry's 32-bit pool_base is a number (it once read 0.0.0.0, beside the
    plan's 0, in the conflict diff); its 32-bit agg_addr is an address."""
    te = build_table_entry(info, "InaIngress.ina_aggregate",
                           {"job": 16, "ps_addr": "10.2.0.1", "worker_addr": "10.1.0.1"},
                           "InaIngress.aggregate",
                           {"pool_base": 0, "pool_size": 64, "fan_in": 2, "rank": 1,
                            "agg_addr": "10.4.0.18"})
    what = table_item(info, te).what
    assert "job=16, ps_addr=10.2.0.1, worker_addr=10.1.0.1" in what
    assert "(pool_base=0, pool_size=64, fan_in=2, rank=1, agg_addr=10.4.0.18)" in what


def test_diff_finds_missing_extra_different_and_equal(info) -> None:
    want = {i.key: i for i in (table_item(info, route(info, "10.1.0.2/32", 1)),
                               table_item(info, route(info, "10.1.0.3/32", 1)),
                               table_item(info, route(info, "10.1.0.4/32", 1)),
                               group_item(1, [(1, 1)]))}
    have = {i.key: i for i in (table_item(info, route(info, "10.1.0.2/32", 1)),
                               table_item(info, route(info, "10.1.0.3/32", 2)),
                               table_item(info, route(info, "10.9.0.9/32", 1)),
                               group_item(1, [(1, 1)]))}
    d = diff(want, have)
    assert [i.what.split("]")[0] for i in d.missing] == ["InaIngress.route_dst[dst_addr=10.1.0.4"
                                                         "/32"]
    assert [i.what.split("]")[0] for i in d.extra] == ["InaIngress.route_dst[dst_addr=10.9.0.9/32"]
    assert [(p.value[1][0], s.value[1][0]) for p, s in d.different] == [((1, 1), (1, 2))]
    assert len(d.equal) == 2 and not d.clean
    assert diff(want, want).clean


def test_desired_items_are_the_compiled_plan(info, fig1_compiled) -> None:
    items = desired_items(info, fig1_compiled.switches["v1"])
    swe = fig1_compiled.switches["v1"]
    assert len(items) == len(swe.entries) + len(swe.groups)
    assert sum(i.is_group for i in items.values()) == len(swe.groups) > 0


@pytest.mark.parametrize("text, expected", [
    ("v1=127.0.0.1:9559", ("v1", "127.0.0.1:9559", None)),
    ("v2=10.0.0.5:50002,device=0", ("v2", "10.0.0.5:50002", 0)),
])
def test_parse_switch(text, expected) -> None:
    assert parse_switch(text) == expected


@pytest.mark.parametrize("text", ["v1", "v1=127.0.0.1", "=1.2.3.4:5", "v1=h:0", "v1=h:70000",
                                  "v1=h:1,dev=2", "v1=h:1,device=x"])
def test_bad_switch_spec_names_the_expectation(text) -> None:
    with pytest.raises(DeployError, match=r"--switch .*expected NAME=HOST:PORT\[,device=N\]"):
        parse_switch(text)


def test_switch_addresses_default_to_the_deploy_layers_device_ids() -> None:
    addr = assign(fig1())
    found = switch_addresses(["v2=h:2", "v1=h:1,device=0"], addr)
    assert [(s.name, s.device_id) for s in found.values()] == [("v1", 0), ("v2", 2)]
    with pytest.raises(DeployError, match="no address for switch.*v2"):
        switch_addresses(["v1=h:1"], addr)
    with pytest.raises(DeployError, match="has no switch 'v9'"):
        switch_addresses(["v9=h:1"], addr)
    with pytest.raises(DeployError, match="given twice"):
        switch_addresses(["v1=h:1", "v1=h:2"], addr)


def test_election_id() -> None:
    assert parse_election_id("0,1") == (0, 1) and parse_election_id("7") == (0, 7)
    for bad in ("0,0", "a", "1,2,3", "-1"):
        with pytest.raises(DeployError, match="--election-id"):
            parse_election_id(bad)


def inart(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", *args],
                          capture_output=True, text=True, timeout=120)


def test_dry_run_shows_entries_ports_and_hosts(fig1_plan_file, fig1_compiled) -> None:
    proc = inart("install", "--plan", str(fig1_plan_file), "--dry-run", "--json",
                 "--switch", "v2=127.0.0.1:9560,device=0")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    v1, v2 = data["switches"]["v1"], data["switches"]["v2"]
    assert v1["ports"] == {"1": "v2", "2": "w1", "3": "w2", "4": "w3", "5": "w4"}
    assert (v1["device_id"], v1["address"]) == (1, None)
    assert (v2["device_id"], v2["address"]) == (0, "127.0.0.1:9560")
    assert len(v1["entries"]) == len(fig1_compiled.switches["v1"].entries)
    assert data["hosts"]["s1"] == {"ip": "10.2.0.2", "mac": "02:00:02:00:00:01",
                                   "switch": "v2", "port": 1}
    text = inart("install", "--plan", str(fig1_plan_file), "--dry-run")
    assert text.returncode == 0
    assert "ports: 1=v2 2=w1 3=w2 4=w3 5=w4" in text.stdout
    assert "route_dst" in text.stdout and "multicast group" in text.stdout


@pytest.mark.parametrize("args, message", [
    (["--plan", "/nonexistent.json", "--dry-run"], "--plan /nonexistent.json: cannot read"),
    (["--switch", "v1=nowhere"], "expected NAME=HOST:PORT"),
    (["--switch", "v1=h:1"], "no address for switch(es) v2"),
    (["--topology", "fattree:4", "--dry-run"], "does not match the plan's topology"),
    (["--election-id", "0,0", "--dry-run"], "--election-id '0,0'"),
])
def test_bad_input_is_a_clear_error(fig1_plan_file, args, message) -> None:
    if "--plan" not in args:
        args = ["--plan", str(fig1_plan_file), *args]
    proc = inart("install", *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_a_bad_plan_names_the_field(tmp_path, fig1_plan_file) -> None:
    data = json.loads(fig1_plan_file.read_text())
    data["schema"] = "inart.plan/0"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    proc = inart("uninstall", "--plan", str(bad), "--switch", "v1=h:1", "--switch", "v2=h:2")
    assert proc.returncode == 2 and "'schema'" in proc.stderr and "inart.plan/1" in proc.stderr
