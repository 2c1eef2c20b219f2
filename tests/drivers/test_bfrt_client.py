"""One BF Runtime session against the fake bf_switchd: a refused Write names each entry and
bf_switchd's reason (decoded from the status details, as bf_switchd packs them); the program
push has its own timeout and binds nothing; a switch without the program is named."""

from __future__ import annotations

import time

import grpc
import pytest
import yaml

from control_plane.deploy.addressing import assign
from control_plane.drivers.bfrt.client import BfrtClient, BfrtError
from control_plane.drivers.bfrt.entities import multicast_entries, table_entry
from control_plane.drivers.bfrt.info import BfrtInfo
from control_plane.drivers.bfrt.install import (
    BATCH,
    BfrtInstallError,
    BfrtSwitch,
    install,
    program_of,
)
from tests.drivers.bfrt_fake import (
    PB2,
    PORT_ID,
    STUBS,
    FakeBfRuntime,
    Refused,
    write_stub_package,
)
from tests.drivers.test_bfrt_driver import FILES, FRONT_DEV, ports_for

PROGRAM = program_of(FILES)


def _pushed(fake: FakeBfRuntime, **kwargs) -> BfrtClient:
    client = BfrtClient(STUBS, fake.address, timeout=5, **kwargs).connect()
    client.push(PROGRAM)
    client.info = BfrtInfo.from_bytes(PROGRAM.bfrt_json,
                                      client.get_config().non_p4_config.bfruntime_info)
    return client


def test_a_refused_write_names_each_entry_and_the_reason():
    """bf_switchd answers a batch with a refused update UNKNOWN "Write Error Status" and one
    packed Error per update; the error names the refused entries, not the others."""
    with FakeBfRuntime() as fake:
        client = _pushed(fake)
        try:
            pb2 = client.pb2
            first = multicast_entries(pb2, client.info, 5, [(16, 101)])
            client.write(pb2.Update.INSERT, first, "inart", "group 5")
            again = multicast_entries(pb2, client.info, 6, [(24, 102), (16, 101)])
            with pytest.raises(BfrtError) as info:
                client.write(pb2.Update.INSERT, again, "inart", "group 6")
            err = info.value
            assert err.code == grpc.StatusCode.UNKNOWN
            # node 101 exists, and a node belongs to one group only (bf_switchd's multicast
            # manager refuses the group that lists it again); node 102 went in
            assert err.failures == [
                (1, "ALREADY_EXISTS", "entry exists (fake)"),
                (2, "ALREADY_EXISTS", "$pre.mgid 6: $pre.node 101 is in group 5 already (fake)")]
            assert str(err) == (f"{fake.address}: Write (group 6): 2 of 3 refused:\n    "
                                f"INSERT $pre.node($MULTICAST_NODE_ID=101): ALREADY_EXISTS: "
                                f"entry exists (fake)\n    "
                                f"INSERT $pre.mgid($MGID=6): ALREADY_EXISTS: $pre.mgid 6: "
                                f"$pre.node 101 is in group 5 already (fake)")
        finally:
            client.close()


class RefuseAll(FakeBfRuntime):
    """A bf_switchd that refuses every update with a message as long as its own (its
    messages name the table, the field and the driver's status)."""

    def _update(self, up) -> None:
        raise Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, "Table Add failed: " + "x" * 200)


def test_a_full_batch_of_refusals_keeps_every_reason():
    """A refused batch of BATCH updates packs more than gRPC's default 16 KiB of trailing
    metadata; the client reads it whole (as the SDE's own client allows) instead of
    answering "received metadata size exceeds hard limit"."""
    with RefuseAll() as fake:
        client = _pushed(fake)
        try:
            entries = multicast_entries(client.pb2, client.info, 5,
                                        [(16, 100 + i) for i in range(BATCH)])[:BATCH]
            with pytest.raises(BfrtError) as info:
                client.write(client.pb2.Update.INSERT, entries, "inart", "a batch")
            assert len(info.value.failures) == BATCH
            assert f"{BATCH} of {BATCH} refused" in str(info.value)
            assert "RESOURCE_EXHAUSTED: Table Add failed: xxx" in str(info.value)
        finally:
            client.close()


class SlowWrite(FakeBfRuntime):
    """A bf_switchd (the Tofino model) whose writes take ``delay`` seconds each."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def _write(self, req, ctx):
        time.sleep(self.delay)
        return super()._write(req, ctx)


def test_a_write_past_its_deadline_says_which_timeout():
    with SlowWrite(delay=1.0) as fake:
        client = _pushed(fake)
        client.timeout = 0.3
        try:
            *nodes, _ = multicast_entries(client.pb2, client.info, 5, [(16, 101)])
            with pytest.raises(BfrtError, match=r"Write \(node\) failed: DEADLINE_EXCEEDED: .*"
                                                r"\(not done within the calls' timeout, 0.3 s; "
                                                r"the Tofino model is slow"):
                client.write(client.pb2.Update.INSERT, nodes, "inart", "node")
        finally:
            client.close()


def test_a_wrong_value_kind_is_refused_as_a_switch_would():
    """The fake checks entries against the SDE's schema: a scalar where the schema has a
    repeated field is refused with the field named."""
    with FakeBfRuntime() as fake:
        client = _pushed(fake)
        try:
            (node, _) = multicast_entries(client.pb2, client.info, 5, [(16, 101)])
            port = next(f for f in node.data.fields if f.field_id == 3)
            port.stream = (16).to_bytes(4, "big")  # what a driver ignoring 'repeated' sends
            with pytest.raises(BfrtError, match=r"INSERT \$pre.node\(\$MULTICAST_NODE_ID=101\): "
                                                r"INVALID_ARGUMENT: \$pre.node \$DEV_PORT: "
                                                r"stream for a repeated uint32 field"):
                client.write(client.pb2.Update.INSERT, [node], "inart", "node")
        finally:
            client.close()


def test_a_group_is_checked_as_the_multicast_manager_checks_it():
    """A group must list existing nodes, with one L1 exclusion id and valid bit per node; a
    node without LAG ids is fine (a schema's 'mandatory' is not enforced by bf_switchd)."""
    with FakeBfRuntime() as fake:
        client = _pushed(fake)
        try:
            pb2, info = client.pb2, client.info
            *nodes, group = multicast_entries(pb2, info, 5, [(16, 101)])
            with pytest.raises(BfrtError, match=r"INSERT \$pre.mgid\(\$MGID=5\): NOT_FOUND: "
                                                r"\$pre.mgid 5: no \$pre.node 101"):
                client.write(pb2.Update.INSERT, [group], "inart", "group before its nodes")
            node = table_entry(pb2, info, "$pre.node", {"$MULTICAST_NODE_ID": 101}, None,
                               {"$MULTICAST_RID": 101, "$DEV_PORT": [16]})
            client.write(pb2.Update.INSERT, [node], "inart", "node without LAG ids")
            uneven = table_entry(pb2, info, "$pre.mgid", {"$MGID": 5}, None,
                                 {"$MULTICAST_NODE_ID": [101],
                                  "$MULTICAST_NODE_L1_XID_VALID": [False],
                                  "$MULTICAST_NODE_L1_XID": []})
            with pytest.raises(BfrtError, match=r"INVALID_ARGUMENT: \$pre.mgid: "
                                                r"\$MULTICAST_NODE_ID, \$MULTICAST_NODE_L1_XID, "
                                                r"\$MULTICAST_NODE_L1_XID_VALID have \[1, 0, 1\]"):
                client.write(pb2.Update.INSERT, [uneven], "inart", "uneven group")
            client.write(pb2.Update.INSERT, [group], "inart", "group")
            # deleting a group frees its nodes for another group
            client.write(pb2.Update.DELETE, [group], "inart", "group")
            (*_, other) = multicast_entries(pb2, info, 6, [(16, 101)])
            client.write(pb2.Update.INSERT, [other], "inart", "another group, same node")
        finally:
            client.close()


def test_install_failure_names_the_refused_entry(fig1_compiled):
    """A batch that fails part-way (bf_switchd goes on past a refused update): the refused
    entries are named, those it applied are deleted again."""
    with FakeBfRuntime({"1/0": FRONT_DEV}, fail_after=20) as fake:
        sw = BfrtSwitch("v1", fake.address, ports_for(fig1_compiled, "v1"))
        with pytest.raises(BfrtInstallError, match=r"(?s)INSERT pipe\.InaIngress\.route_dst\("
                                                   r"dst_addr=0x[0-9a-f]{8}/32\): "
                                                   r"RESOURCE_EXHAUSTED: table full \(fake\)"
                                                   r".*rolled back:\n  v1: deleted \d+ entries"):
            install(fig1_compiled, [sw], FILES, stubs=STUBS, timeout=5)
        assert {te.table_id for te in fake.entries.values()} == {PORT_ID}


class SlowPush(FakeBfRuntime):
    """A bf_switchd whose warm init takes ``delay`` seconds; records each push's deadline."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay, self.deadlines = delay, []

    def _set(self, req, ctx):
        self.deadlines.append(ctx.time_remaining())
        time.sleep(self.delay)
        return super()._set(req, ctx)


def test_the_push_has_its_own_timeout_and_binds_nothing():
    with SlowPush(delay=0.5) as fake:
        client = BfrtClient(STUBS, fake.address, timeout=0.2, push_timeout=30).connect()
        try:
            client.push(PROGRAM)  # longer than the per-call timeout: the push's own applies
            assert 25 < fake.deadlines[0] < 31  # rounded on the wire, as below
            (push,) = fake.of(PB2.SetForwardingPipelineConfigRequest)
            assert push.action == push.VERIFY_AND_WARM_INIT_BEGIN_AND_END
        finally:
            client.close()
    with SlowPush(delay=1.5) as fake:
        client = BfrtClient(STUBS, fake.address, timeout=5, push_timeout=0.3).connect()
        try:
            with pytest.raises(BfrtError, match=r"SetForwardingPipelineConfig \(push\) did not "
                                                r"finish within 0.3 s \(a longer --push-timeout"):
                client.push(PROGRAM)
        finally:
            client.close()


def test_the_push_waits_longer_than_other_calls_by_default():
    """Without a push timeout the push gets DEFAULT_PUSH_TIMEOUT_S (the Tofino model's warm
    init can take minutes), not the 20 s of other calls; `inart install` and `inart ptf`
    default to it too."""
    from control_plane.cli.main import build_parser
    from control_plane.drivers.bfrt.client import DEFAULT_PUSH_TIMEOUT_S, DEFAULT_TIMEOUT_S

    assert DEFAULT_PUSH_TIMEOUT_S >= 120 > DEFAULT_TIMEOUT_S
    with SlowPush(delay=0) as fake:
        client = BfrtClient(STUBS, fake.address).connect()
        try:
            client.push(PROGRAM)
        finally:
            client.close()
        assert DEFAULT_PUSH_TIMEOUT_S - 6 < fake.deadlines[0] <= DEFAULT_PUSH_TIMEOUT_S + 1
    for argv in (["install", "--plan", "p.json"], ["ptf", "--target", "tofino"]):
        assert build_parser(argv).parse_args(argv).push_timeout == DEFAULT_PUSH_TIMEOUT_S


def test_install_without_push_needs_the_program_running(fig1_compiled):
    with FakeBfRuntime({"1/0": FRONT_DEV}) as fake:
        sw = BfrtSwitch("v1", fake.address, ports_for(fig1_compiled, "v1"))
        with pytest.raises(BfrtInstallError, match=r"runs no program 'inart' \(it runs: none\); "
                                                   r"push it first"):
            install(fig1_compiled, [sw], FILES, push=False, stubs=STUBS, timeout=5)
        _pushed(fake).close()  # loaded by another client, which holds it no longer
        written = install(fig1_compiled, [sw], FILES, push=False, stubs=STUBS, timeout=5)
        assert written["v1"] > 0 and len(fake.of(PB2.SetForwardingPipelineConfigRequest)) == 1


def test_inart_install_bfrt_takes_a_push_timeout(fig1_plan, tmp_path, monkeypatch, capsys,
                                                  fresh_bfrt_grpc):
    """`inart install --bfrt --push-timeout S`: the push may take S seconds, other calls
    --timeout."""
    from control_plane.cli.main import main

    pkg = tmp_path / "stubs" / "bfrt_grpc"  # the SDE's package, standing in
    write_stub_package(pkg)
    monkeypatch.setenv("INART_BFRT_GRPC", str(pkg.parent))
    plan = tmp_path / "plan.json"
    fig1_plan.save(plan)
    with SlowPush(delay=0) as f1, SlowPush(delay=0) as f2:
        args = ["install", "--plan", str(plan), "--target", "tofino", "--bfrt",
                "--timeout", "5", "--push-timeout", "42", "--out", str(tmp_path / "out")]
        for name, fake in (("v1", f1), ("v2", f2)):
            ports = tmp_path / f"{name}.yaml"
            ports.write_text(yaml.safe_dump(ports_for_file(fig1_plan, name)))
            args += ["--switch", f"{name}={fake.address},device=0", "--ports", f"{name}={ports}"]
        assert main(args) == 0, capsys.readouterr().err
        for fake in (f1, f2):
            (deadline,) = fake.deadlines
            # the push's 42 s, not --timeout's 5 (the deadline crosses the wire as a rounded
            # grpc-timeout header: a loaded run saw 42.09 s left on arrival)
            assert 37 < deadline < 43
    assert "install: " in capsys.readouterr().out


def ports_for_file(plan, switch: str) -> dict:
    """A ports file for ``switch``: plan port k on dev port 8 k."""
    count = sum(1 for (s, _) in assign(plan.topology).port if s == switch)
    return {"schema": "inart.ports/1", "ports": [
        {"port": k, "dev_port": 8 * k, "speed": "100G"} for k in range(1, count + 1)]}
