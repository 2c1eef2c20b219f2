"""The BF Runtime driver against a fake bf_switchd: every byte it sends is decoded with the
committed bfrt.json (independently of the driver's own lookup) and compared, field by field,
with the deploy layer's entries for the plan."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from control_plane.deploy.portmap import remap_ports
from control_plane.drivers.bfrt.install import BfrtInstallError, BfrtSwitch, install
from control_plane.drivers.p4runtime.values import encode_value
from control_plane.drivers.tofino.ports import parse_ports
from control_plane.drivers.tofino.stratum import TofinoFiles
from control_plane.p4build.sources import BUILD_DIR
from tests.drivers.bfrt_fake import MGID_ID, NODE_ID, NON_P4, PB2, PORT_ID, STUBS, FakeBfRuntime

TNA = BUILD_DIR / "tna"
FILES = TofinoFiles.in_build(TNA)
BFRT = json.loads(FILES.bfrt_json.read_text())
FIXED = {t["id"]: t for t in NON_P4["tables"]}  # the SDE's fixed tables, by id
FRONT_DEV = 128  # what the fake answers for front-panel port 1/0


def fixed_data(te) -> dict:
    """A fixed-table entry's data by the SDE schema's field names: ints from streams, lists
    from arrays, as sent."""
    names = {d["singleton"]["id"]: d["singleton"]["name"] for d in FIXED[te.table_id]["data"]}
    out = {}
    for d in te.data.fields:
        kind = d.WhichOneof("value")
        value = getattr(d, kind)
        out[names[d.field_id]] = (int.from_bytes(value, "big") if kind == "stream"
                                  else list(value.val) if kind.endswith("_arr_val") else value)
    return out


def fixed_key(te) -> int:
    return int.from_bytes(te.key.fields[0].exact.value, "big")


def ports_for(compiled, switch: str) -> dict:
    """Plan port 1 given by front-panel name, the others by dev port 8 * k."""
    count = max(p for e in compiled.switches[switch].entries for k, p in e.params
                if k == "port")
    return parse_ports({"schema": "inart.ports/1", "ports": [
        {"port": 1, "front": "1/0", "speed": "100G", "fec": "rs"},
        *({"port": k, "dev_port": 8 * k, "speed": "25G"} for k in range(2, count + 1))]},
        f"{switch}.yaml")


def _int(value, width: int) -> int:
    return int.from_bytes(encode_value(value, width, "test"), "big")


def decode(te) -> tuple:
    """(table, match, action, params) of a P4 table entry, by bfrt.json names."""
    table = next(t for t in BFRT["tables"] if t["id"] == te.table_id)
    keys = {k["id"]: k for k in table["key"]}
    match = {}
    for kf in te.key.fields:
        k = keys[kf.field_id]
        width = k["type"]["width"]
        if k["match_type"] == "LPM":
            assert len(kf.lpm.value) == (width + 7) // 8, k["name"]
            match[k["name"]] = (int.from_bytes(kf.lpm.value, "big"), kf.lpm.prefix_len)
        else:
            assert len(kf.exact.value) == (width + 7) // 8, k["name"]
            match[k["name"]] = int.from_bytes(kf.exact.value, "big")
    action = next(a for a in table["action_specs"] if a["id"] == te.data.action_id)
    fields = {d["id"]: d for d in action["data"]}
    params = {}
    for df in te.data.fields:
        d = fields[df.field_id]
        assert len(df.stream) == (d["type"]["width"] + 7) // 8, (action["name"], d["name"])
        params[d["name"]] = int.from_bytes(df.stream, "big")
    return table["name"], match, action["name"], params


def expected(entries) -> list[tuple]:
    """The deploy layer's entries in decode()'s form."""
    out = []
    for e in entries.entries:
        table = next(t for t in BFRT["tables"] if t["name"] == f"pipe.{e.table}")
        keys = {k["name"]: k for k in table["key"]}
        match = {}
        for name, value in e.match:
            width = keys[name]["type"]["width"]
            if keys[name]["match_type"] == "LPM":
                addr, _, plen = str(value).partition("/")
                match[name] = (_int(addr, width), int(plen))
            else:
                match[name] = _int(value, width)
        action = next(a for a in table["action_specs"] if a["name"] == e.action)
        widths = {d["name"]: d["type"]["width"] for d in action["data"]}
        out.append((table["name"], match, e.action,
                    {k: _int(v, widths[k]) for k, v in e.params}))
    return out


def _p4_entries(fake) -> list:
    return [te for te in fake.entries.values() if te.table_id not in FIXED]


def _run(fig1_compiled, fakes: dict, **kwargs):
    switches = [BfrtSwitch(name, fake.address, ports_for(fig1_compiled, name))
                for name, fake in fakes.items()]
    return install(fig1_compiled, switches, FILES, stubs=STUBS, timeout=5, **kwargs)


def test_install_writes_what_bfrt_json_says(fig1_compiled):
    with FakeBfRuntime({"1/0": FRONT_DEV}) as f1, FakeBfRuntime({"1/0": FRONT_DEV}) as f2:
        written = _run(fig1_compiled, {"v1": f1, "v2": f2})
        for name, fake in (("v1", f1), ("v2", f2)):
            ports = ports_for(fig1_compiled, name)
            mapping = ports.dev_ports({"1/0": FRONT_DEV})
            want = remap_ports(fig1_compiled.switches[name], mapping)
            # the program push: bfrt.json, context.json and tofino.bin as compiled
            (push,) = fake.of(PB2.SetForwardingPipelineConfigRequest)
            assert push.action == push.VERIFY_AND_WARM_INIT_BEGIN_AND_END
            cfg = push.config[0]
            assert cfg.p4_name == "inart" and cfg.bfruntime_info == FILES.bfrt_json.read_bytes()
            assert cfg.profiles[0].profile_name == "pipe"
            assert cfg.profiles[0].context == FILES.context_json.read_bytes()
            assert cfg.profiles[0].binary == FILES.binary.read_bytes()
            # every P4 entry decodes (by bfrt.json) to exactly the plan's entries
            got = sorted(map(repr, (decode(te) for te in _p4_entries(fake))))
            assert got == sorted(map(repr, expected(want)))
            # ports: looked up, then added with speed/FEC/AN as bf_switchd names them
            port_rows = {fixed_key(te): fixed_data(te)
                         for te in fake.entries.values() if te.table_id == PORT_ID}
            assert set(port_rows) == set(mapping.values())
            assert port_rows[FRONT_DEV] == {"$SPEED": "BF_SPEED_100G",
                                            "$FEC": "BF_FEC_TYP_REED_SOLOMON",
                                            "$AUTO_NEGOTIATION": "PM_AN_DEFAULT",
                                            "$PORT_ENABLE": True}
            # PRE: one node per replica (its rid and dev port), one mgid listing them; the
            # SDE schema's repeated fields as arrays (the fake refuses anything else)
            nodes = {fixed_key(te): fixed_data(te)
                     for te in fake.entries.values() if te.table_id == NODE_ID}
            groups = {fixed_key(te): fixed_data(te)
                      for te in fake.entries.values() if te.table_id == MGID_ID}
            assert groups == {g.group_id: {
                "$MULTICAST_NODE_ID": [r for _, r in g.replicas],
                "$MULTICAST_NODE_L1_XID_VALID": [False] * len(g.replicas),
                "$MULTICAST_NODE_L1_XID": [0] * len(g.replicas)} for g in want.groups}
            assert nodes == {r: {"$MULTICAST_RID": r, "$MULTICAST_LAG_ID": [], "$DEV_PORT": [p]}
                             for g in want.groups for p, r in g.replicas}
            assert written[name] == len(want.entries) + len(want.groups) + len(nodes)


def test_failure_deletes_everything_written(fig1_compiled):
    with FakeBfRuntime({"1/0": FRONT_DEV}) as f1, \
            FakeBfRuntime({"1/0": FRONT_DEV}, fail_after=20) as f2:
        with pytest.raises(BfrtInstallError, match=r"(?s)RESOURCE_EXHAUSTED.*rolled back:.*"
                                                   r"v1: deleted \d+ entries"):
            _run(fig1_compiled, {"v1": f1, "v2": f2})
        assert _p4_entries(f1) == [] and _p4_entries(f2) == []


def test_unknown_front_panel_port_is_named(fig1_compiled):
    with FakeBfRuntime({}) as f1:
        with pytest.raises(BfrtInstallError, match=r"no port 1/0|1/0 unknown"):
            _run(fig1_compiled, {"v1": f1})


def test_a_wrong_name_is_refused_before_any_write(fig1_compiled):
    v1 = fig1_compiled.switches["v1"]
    bad = replace(v1.entries[0], action="InaIngress.no_such_action")
    compiled = replace(fig1_compiled, switches={
        **fig1_compiled.switches, "v1": replace(v1, entries=[bad, *v1.entries[1:]])})
    with FakeBfRuntime({"1/0": FRONT_DEV}) as f1:
        with pytest.raises(BfrtInstallError, match="no action 'InaIngress.no_such_action'"):
            _run(compiled, {"v1": f1})
        assert _p4_entries(f1) == []


def test_a_second_install_keeps_the_ports(fig1_compiled):
    """A push is a fast reconfig: bf_switchd keeps the ports it had, and adding an added port
    succeeds (the port keeps its settings), so installing again works."""
    with FakeBfRuntime({"1/0": FRONT_DEV}) as f1:
        first = _run(fig1_compiled, {"v1": f1})
        ports = {k: te for k, te in f1.entries.items() if te.table_id == PORT_ID}
        assert _run(fig1_compiled, {"v1": f1}) == first
        assert {k: te for k, te in f1.entries.items() if te.table_id == PORT_ID} == ports
        assert len(f1.of(PB2.SetForwardingPipelineConfigRequest)) == 2
