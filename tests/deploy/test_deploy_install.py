"""`inart install` on running switches (embedded target; bmv2 where installed): fig1's inart
plan onto v1 and v2, verify, idempotence, uninstall, rollback after a failure part-way, and
P4Runtime mastership."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from google.rpc import code_pb2

from control_plane.deploy.pipeline import pipeline_for
from control_plane.deploy.state import read_items
from control_plane.deploy.transaction import (
    ConflictError,
    DeployError,
    SwitchAddress,
    WriteFailure,
    install,
    uninstall,
    verify,
    verify_clean,
)
from control_plane.drivers.p4runtime import P4Info, P4RuntimeClient, P4RuntimeError
from control_plane.repo import child_env

PIPELINE = pipeline_for("embedded")
INFO = P4Info.load(PIPELINE.p4info)


def reader(sw: SwitchAddress) -> P4RuntimeClient:
    """A client that only reads (no arbitration, so it never disturbs a primary)."""
    client = P4RuntimeClient(sw.address, sw.device_id, timeout=10).wait_ready()
    client.use_p4info(INFO)
    return client


def held(sw: SwitchAddress) -> dict:
    """Every entry and multicast group the switch holds, by key."""
    client = reader(sw)
    try:
        return read_items(client, INFO) if client.get_pipeline() is not None else {}
    finally:
        client.close()


def has_pipeline(sw: SwitchAddress) -> bool:
    client = reader(sw)
    try:
        return client.get_pipeline() is not None
    finally:
        client.close()


def test_install_verify_reinstall_uninstall(switches, fig1_compiled) -> None:
    sws = switches.addresses
    reports = install(fig1_compiled, sws, PIPELINE)
    for r in reports:
        swe = fig1_compiled.switches[r.switch.name]
        assert r.pushed and r.pipeline == "none"
        assert r.written == {"insert": len(swe.entries) + len(swe.groups)}
    assert verify_clean(verify(fig1_compiled, sws, PIPELINE))

    again = install(fig1_compiled, sws, PIPELINE)
    assert [(r.pipeline, r.pushed, r.written) for r in again] == [("ours", False, {})] * 2
    assert [r.unchanged for r in again] == [r.written["insert"] for r in reports]

    gone = uninstall(fig1_compiled, sws, PIPELINE)
    assert [r.written for r in gone] == [{"delete": r.written["insert"]} for r in reports]
    for sw in sws.values():
        assert held(sw) == {}, f"{sw.name} still holds entries after uninstall"
    after = verify(fig1_compiled, sws, PIPELINE)
    assert not verify_clean(after)
    for r, before in zip(after, reports, strict=True):
        assert r.diff is not None and not r.diff.extra
        assert len(r.diff.missing) == before.written["insert"]


def test_verify_names_every_difference_and_install_refuses_conflicts(switches,
                                                                     fig1_compiled) -> None:
    sws = switches.addresses
    install(fig1_compiled, sws, PIPELINE)
    v1 = sws["v1"]
    with P4RuntimeClient(v1.address, v1.device_id, (0, 1), timeout=10) as other:
        other.use_p4info(INFO)
        other.delete_table_entry("InaIngress.route_dst", {"dst_addr": "10.1.0.3/32"})
        other.modify_table_entry("InaIngress.route_dst", {"dst_addr": "10.1.0.2/32"},
                                 "InaIngress.set_next_hop",
                                 {"port": 9, "dst_mac": 1, "src_mac": 2})
        other.insert_table_entry("InaIngress.route_dst", {"dst_addr": "10.9.9.9/32"},
                                 "InaIngress.set_next_hop",
                                 {"port": 1, "dst_mac": 1, "src_mac": 2})
    reports = {r.switch.name: r for r in verify(fig1_compiled, sws, PIPELINE)}
    d1 = reports["v1"].diff
    assert d1 is not None and reports["v2"].diff is not None and reports["v2"].diff.clean
    assert [i.what for i in d1.missing] == [
        "InaIngress.route_dst[dst_addr=10.1.0.3/32] -> InaIngress.set_next_hop(port=3, "
        "dst_mac=02:00:01:00:00:02, src_mac=02:00:05:00:00:01) (route to w2)"]
    assert [i.what.split(" -> ")[0] for i in d1.extra] == [
        "InaIngress.route_dst[dst_addr=10.9.9.9/32]"]
    assert [(p.what.split(" -> ")[0], "port=9" in s.what) for p, s in d1.different] == [
        ("InaIngress.route_dst[dst_addr=10.1.0.2/32]", True)]

    with pytest.raises(ConflictError, match=r"(?s)switch 'v1'.*1 item\(s\) differ.*"
                                            r"dst_addr=10.1.0.2/32.*give --replace"):
        install(fig1_compiled, sws, PIPELINE)
    assert len(verify(fig1_compiled, sws, PIPELINE)[0].diff.missing) == 1, "wrote anyway"

    fixed = install(fig1_compiled, sws, PIPELINE, replace=True)
    assert (fixed[0].written, fixed[0].extra) == ({"insert": 1, "modify": 1}, 1)
    after = verify(fig1_compiled, sws, PIPELINE)
    assert [(len(r.diff.missing), len(r.diff.different), len(r.diff.extra)) for r in after] \
        == [(0, 0, 1), (0, 0, 0)]
    with P4RuntimeClient(v1.address, v1.device_id, (0, 1), timeout=10) as other:
        other.use_p4info(INFO)
        other.modify_table_entry("InaIngress.route_dst", {"dst_addr": "10.1.0.2/32"},
                                 "InaIngress.set_next_hop",
                                 {"port": 8, "dst_mac": 1, "src_mac": 2})
    with pytest.raises(ConflictError, match="give --force"):  # not the plan's entry any more
        uninstall(fig1_compiled, sws, PIPELINE)
    uninstall(fig1_compiled, sws, PIPELINE, force=True)
    assert [i.what.split(" -> ")[0] for i in held(v1).values()] == [
        "InaIngress.route_dst[dst_addr=10.9.9.9/32]"], "uninstall removed more than the plan"


def test_a_killed_switch_leaves_no_plan_entries_on_the_others(switches, fig1_compiled) -> None:
    sws = switches.addresses

    def kill_v2_once_v1_is_done(switch: str, event: str, count: int) -> None:
        if (switch, event) == ("v1", "done"):
            switches.procs["v2"].stop()

    with pytest.raises(WriteFailure) as err:
        install(fig1_compiled, sws, PIPELINE, progress=kill_v2_once_v1_is_done)
    text = str(err.value)
    assert "switch 'v2'" in text and "pipeline push refused" in text, text
    assert "failed: UNAVAILABLE" in text, text
    n = len(fig1_compiled.switches["v1"].entries) + len(fig1_compiled.switches["v1"].groups)
    assert f"v1: undid {n} update(s) (it keeps the pipeline this run pushed)" in text
    assert held(sws["v1"]) == {}


def test_a_refused_entry_mid_batch_rolls_back_every_switch(switches, fig1_compiled) -> None:
    sws = switches.addresses
    v2 = sws["v2"]
    squatter = P4RuntimeClient(v2.address, v2.device_id, (0, 1), timeout=10)
    squatter.use_p4info(INFO)

    def take_a_key_on_v2(switch: str, event: str, count: int) -> None:
        if (switch, event) == ("v2", "pipeline"):  # same election id: its Write is accepted
            squatter.insert_table_entry("InaIngress.route_dst", {"dst_addr": "10.1.0.6/32"},
                                        "InaIngress.set_next_hop",
                                        {"port": 7, "dst_mac": 1, "src_mac": 2})

    try:
        with pytest.raises(WriteFailure) as err:
            install(fig1_compiled, sws, PIPELINE, progress=take_a_key_on_v2)
    finally:
        squatter.close()
    text = str(err.value)
    assert ("switch 'v2' (" in text and "INSERT InaIngress.route_dst[dst_addr=10.1.0.6/32]"
            in text and "(route to w5) refused: ALREADY_EXISTS" in text), text
    assert "v2: undid" in text and "v1: undid" in text
    assert held(sws["v1"]) == {}
    left = held(v2)
    assert [i.what for i in left.values()] == [
        "InaIngress.route_dst[dst_addr=10.1.0.6/32] -> InaIngress.set_next_hop(port=7, "
        "dst_mac=00:00:00:00:00:01, src_mac=00:00:00:00:00:02)"], "rollback took the other's"


def test_ctrl_c_part_way_rolls_back_too(switches, fig1_compiled) -> None:
    def interrupt(switch: str, event: str, count: int) -> None:
        if (switch, event) == ("v2", "pipeline"):
            raise KeyboardInterrupt

    with pytest.raises(WriteFailure, match=r"(?s)install interrupted: Ctrl-C.*v1: undid"):
        install(fig1_compiled, switches.addresses, PIPELINE, progress=interrupt)
    assert all(held(sw) == {} for sw in switches.addresses.values())


def test_reset_pushes_the_pipeline_again(switches, fig1_compiled) -> None:
    sws = switches.addresses
    install(fig1_compiled, sws, PIPELINE)
    v1 = sws["v1"]
    with P4RuntimeClient(v1.address, v1.device_id, (0, 1), timeout=10) as other:
        other.use_p4info(INFO)
        other.insert_table_entry("InaIngress.route_dst", {"dst_addr": "10.9.9.9/32"},
                                 "InaIngress.set_next_hop", {"port": 1, "dst_mac": 1,
                                                             "src_mac": 2})
    again = install(fig1_compiled, sws, PIPELINE, reset=True)
    assert [(r.pipeline, r.pushed, r.unchanged) for r in again] == [("ours", True, 0)] * 2
    assert verify_clean(verify(fig1_compiled, sws, PIPELINE)), "the extra entry survived"


def test_a_higher_primary_elsewhere_is_a_clear_error_before_any_write(switches,
                                                                      fig1_compiled) -> None:
    sws = switches.addresses
    v2 = sws["v2"]
    with P4RuntimeClient(v2.address, v2.device_id, (0, 10), timeout=10) as boss:
        with pytest.raises(DeployError, match=r"switch 'v2' .*another controller is primary "
                                              r"with election id 0,10, higher than our "
                                              r"election id 0,1; nothing was written"):
            install(fig1_compiled, sws, PIPELINE, election_id=(0, 1))
        assert boss.is_primary
        assert not any(has_pipeline(sw) for sw in sws.values()), "a switch was written"
        install(fig1_compiled, sws, PIPELINE, election_id=(0, 11))  # on purpose: take over
    assert verify_clean(verify(fig1_compiled, sws, PIPELINE))


def test_two_clients_arbitrate_as_p4runtime_says(switches) -> None:
    sw = switches.addresses["v1"]
    first = P4RuntimeClient(sw.address, sw.device_id, (0, 5), timeout=10).connect()
    second = P4RuntimeClient(sw.address, sw.device_id, (0, 2), timeout=10)
    try:
        first.set_pipeline(PIPELINE.p4info, PIPELINE.config)
        with pytest.raises(P4RuntimeError, match="not primary"):
            second.connect()
        assert second.arbitration_code == code_pb2.ALREADY_EXISTS
        assert second.primary_election_id == (0, 5)
        second.close()
        second = P4RuntimeClient(sw.address, sw.device_id, (0, 2), timeout=10)
        second.connect(primary=False)
        second.use_p4info(INFO)
        with pytest.raises(P4RuntimeError, match="PERMISSION_DENIED"):
            second.insert_multicast_group(1, [(1, 1)])
        first.close()
        second.wait_primary(10)  # the primary left: the backup is promoted
        second.insert_multicast_group(1, [(1, 1)])
    finally:
        first.close()
        second.close()


def test_wrong_device_id_names_the_fix(switches, fig1_compiled) -> None:
    sws = dict(switches.addresses)
    sws["v1"] = SwitchAddress("v1", sws["v1"].address, 7)
    with pytest.raises(DeployError, match=r"device 7.*--switch v1=127.0.0.1:\d+,device=N"):
        install(fig1_compiled, sws, PIPELINE)  # embedded: at arbitration; bmv2: at the push
    assert not any(has_pipeline(sw) for sw in switches.addresses.values())


def inart(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd, env=child_env())


def test_cli_session(switches, fig1_plan_file, tmp_path) -> None:
    common = ["--plan", str(fig1_plan_file), *switches.args(), "--target", switches.target]
    first = inart("install", *common, "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    done = json.loads(first.stdout)["switches"]
    assert done["v1"]["pushed"] and done["v2"]["written"]["insert"] > 0
    # the result is also kept under out/install/ of the directory it ran in
    kept = tmp_path / "out" / "install" / "install.json"
    assert json.loads(kept.read_text())["switches"] == done
    assert f"wrote {Path('out/install/install.json')}" in first.stderr
    check = inart("install", *common, "--verify")
    assert check.returncode == 0 and "verify: no difference" in check.stdout, check.stdout
    again = inart("install", *common, "--json")
    assert [s["written"] for s in json.loads(again.stdout)["switches"].values()] == [{}, {}]
    out = inart("uninstall", *common)
    assert out.returncode == 0 and "uninstall:" in out.stdout, out.stderr
    check = inart("install", *common, "--verify", "--json")
    assert check.returncode == 1 and not json.loads(check.stdout)["clean"]
