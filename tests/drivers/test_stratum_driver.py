"""A plan onto a Tofino behind Stratum: the unchanged P4Runtime install against a fake
Stratum, with the TNA build packed as BfPipelineConfig.  Every update is decoded with the
committed TNA P4Info (not the driver's lookup) and compared field by field with the plan's
entries, ports rewritten to dev ports."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2, status_pb2

from control_plane.deploy.pipeline import pipeline_for
from control_plane.deploy.portmap import remap_compiled
from control_plane.deploy.transaction import SwitchAddress, install
from control_plane.drivers.p4runtime.client import P4RuntimeClient
from control_plane.drivers.p4runtime.values import P4RuntimeError, encode_value
from control_plane.drivers.tofino.stratum import TofinoFiles, unpack
from control_plane.p4build.sources import BUILD_DIR
from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from tests.drivers.p4rt_fake import FakeStratum

TNA = BUILD_DIR / "tna"
INFO = p4info_pb2.P4Info.FromString((TNA / "inart.p4info.bin").read_bytes())
MAPPING = {k: 8 * k for k in range(1, 10)}  # plan port k -> dev port 8k


def _int(value, width: int) -> int:
    return int.from_bytes(encode_value(value, width, "test"), "big")


def decode(te: p4runtime_pb2.TableEntry) -> tuple:
    table = next(t for t in INFO.tables if t.preamble.id == te.table_id)
    fields = {f.id: f for f in table.match_fields}
    match = {}
    for fm in te.match:
        f = fields[fm.field_id]
        if fm.HasField("lpm"):
            match[f.name] = (int.from_bytes(fm.lpm.value, "big"), fm.lpm.prefix_len)
        else:
            match[f.name] = int.from_bytes(fm.exact.value, "big")
    action = next(a for a in INFO.actions if a.preamble.id == te.action.action.action_id)
    names = {p.id: p.name for p in action.params}
    params = {names[p.param_id]: int.from_bytes(p.value, "big")
              for p in te.action.action.params}
    return table.preamble.name, match, action.preamble.name, params


def expected(entries) -> list[tuple]:
    out = []
    for e in entries.entries:
        table = next(t for t in INFO.tables if t.preamble.name == e.table)
        fields = {f.name: f for f in table.match_fields}
        match = {}
        for name, value in e.match:
            f = fields[name]
            if f.match_type == p4info_pb2.MatchField.LPM:
                addr, _, plen = str(value).partition("/")
                match[name] = (_int(addr, f.bitwidth), int(plen))
            else:
                match[name] = _int(value, f.bitwidth)
        action = next(a for a in INFO.actions if a.preamble.name == e.action)
        widths = {p.name: p.bitwidth for p in action.params}
        out.append((e.table, match, e.action, {k: _int(v, widths[k]) for k, v in e.params}))
    return out


def test_install_through_stratum(fig1_compiled):
    compiled = remap_compiled(fig1_compiled, {"v1": MAPPING, "v2": MAPPING})
    files = TofinoFiles.in_build(TNA)
    with FakeStratum() as s1, FakeStratum() as s2:
        switches = {"v1": SwitchAddress("v1", s1.address, 1),
                    "v2": SwitchAddress("v2", s2.address, 2)}
        reports = install(compiled, switches, pipeline_for("tofino"), timeout=5)
        assert all(r.pushed for r in reports)
        for name, fake in (("v1", s1), ("v2", s2)):
            (push,) = fake.of(p4runtime_pb2.SetForwardingPipelineConfigRequest)
            assert push.config.p4info.SerializeToString(deterministic=True) == \
                INFO.SerializeToString(deterministic=True)
            cfg = unpack(push.config.p4_device_config)
            assert cfg.p4_name == "inart"
            assert cfg.bfruntime_info == files.bfrt_json.read_bytes()
            (profile,) = cfg.profiles
            assert profile.profile_name == "pipe" and list(profile.pipe_scope) == []
            assert profile.context == files.context_json.read_bytes()
            assert profile.binary == files.binary.read_bytes()
            updates = [u for w in fake.of(p4runtime_pb2.WriteRequest) for u in w.updates]
            tables = [decode(u.entity.table_entry) for u in updates
                      if u.entity.HasField("table_entry")]
            assert sorted(map(repr, tables)) == sorted(map(repr, expected(
                compiled.switches[name])))
            groups = {u.entity.packet_replication_engine_entry.multicast_group_entry
                      .multicast_group_id: sorted(
                          (r.egress_port, r.instance) for r in u.entity
                          .packet_replication_engine_entry.multicast_group_entry.replicas)
                      for u in updates if u.entity.HasField("packet_replication_engine_entry")}
            assert groups == {g.group_id: sorted((MAPPING[p], r) for p, r in g.replicas)
                              for g in fig1_compiled.switches[name].groups}


def test_inart_install_target_tofino(fig1_plan, tmp_path, capsys):
    """`inart install --target tofino --ports ...`: the plan's ports become the files'
    dev ports on the wire; a switch without a ports file is refused before any write."""
    from control_plane.cli.main import main

    plan = tmp_path / "plan.json"
    fig1_plan.save(plan)
    ports = []
    for sw in ("v1", "v2"):
        path = tmp_path / f"{sw}.yaml"
        path.write_text("schema: inart.ports/1\nports:\n" + "".join(
            f"  - {{port: {k}, dev_port: {8 * k}, speed: 100G}}\n" for k in range(1, 10)))
        ports += ["--ports", f"{sw}={path}"]
    with FakeStratum() as s1, FakeStratum() as s2:
        args = ["install", "--plan", str(plan), "--target", "tofino",
                "--switch", f"v1={s1.address},device=1", "--switch", f"v2={s2.address},device=2"]
        assert main([*args, ports[0], ports[1]]) == 2
        assert "no ports file for switch(es) v2" in capsys.readouterr().err
        assert s1.of(p4runtime_pb2.SetForwardingPipelineConfigRequest) == []
        assert main([*args, *ports, "--timeout", "5"]) == 0
        sent = {r.egress_port for w in s1.of(p4runtime_pb2.WriteRequest) for u in w.updates
                for r in u.entity.packet_replication_engine_entry.multicast_group_entry.replicas}
        assert sent and sent <= set(MAPPING.values())


class RefusingStratum(FakeStratum):
    """A P4Runtime server that refuses every update of a Write, with one p4.v1.Error each
    packed in the status details, as the P4Runtime spec has it."""

    def Write(self, request, context):
        status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failed")
        for _ in request.updates:
            status.details.add().Pack(p4runtime_pb2.Error(
                canonical_code=code_pb2.RESOURCE_EXHAUSTED, message="table full: " + "x" * 200))
        context.set_trailing_metadata(
            (("grpc-status-details-bin", status.SerializeToString()),))
        context.abort(grpc.StatusCode.UNKNOWN, "Write failed")


def test_a_refused_batch_keeps_every_reason():
    """Refusals of a hundred updates are more than gRPC's default 16 KiB of trailing
    metadata; the client still reads each one."""
    with RefusingStratum() as fake:
        client = P4RuntimeClient(fake.address, device_id=1, timeout=5).connect()
        try:
            updates = [p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
                       for _ in range(128)]
            with pytest.raises(P4RuntimeError) as info:
                client.write(updates)
            assert len(info.value.errors) == 128
            assert "update 127: RESOURCE_EXHAUSTED table full: xxx" in str(info.value)
        finally:
            client.close()
