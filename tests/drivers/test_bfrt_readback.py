"""BF Runtime verify and uninstall against the fake bf_switchd: what is read back is compared
with the plan; what is deleted decodes, field by field by the committed bfrt.json, to exactly
the deploy layer's entries; nothing half-deleted is left after a failure."""

from __future__ import annotations

import pytest

from control_plane.deploy.portmap import remap_ports
from control_plane.drivers.bfrt.install import BfrtSwitch
from control_plane.drivers.bfrt.readback import BfrtReadbackError, uninstall, verify
from tests.drivers.bfrt_fake import PB2, PORT_ID, STUBS, FakeBfRuntime
from tests.drivers.test_bfrt_driver import (
    BFRT,
    FILES,
    FIXED,
    FRONT_DEV,
    _p4_entries,
    _run,
    decode,
    expected,
    ports_for,
)

PRE_TABLES = {t["id"] for t in FIXED.values() if t["name"].startswith("$pre.")}


def switches(compiled, fakes: dict) -> list[BfrtSwitch]:
    return [BfrtSwitch(name, fake.address, ports_for(compiled, name))
            for name, fake in fakes.items()]


def plan_entries(fake) -> list:
    """What the plan put there: P4 entries and PRE nodes/groups (ports stay)."""
    return [te for te in fake.entries.values()
            if te.table_id not in FIXED or te.table_id in PRE_TABLES]


def test_verify_after_install_is_clean_and_reads_the_plans_tables(fig1_compiled):
    with FakeBfRuntime({"1/0": FRONT_DEV}) as f1, FakeBfRuntime({"1/0": FRONT_DEV}) as f2:
        fakes = {"v1": f1, "v2": f2}
        written = _run(fig1_compiled, fakes)
        reports = verify(fig1_compiled, switches(fig1_compiled, fakes), FILES, stubs=STUBS,
                         timeout=5)
        for r in reports:
            assert r.clean and r.program == "ours", r
            assert len(r.equal) == written[r.switch.name]
            # the reads: whole tables, by the ids bfrt.json gives the plan's tables
            reads = [e.table_entry for req in fakes[r.switch.name].of(PB2.ReadRequest)
                     for e in req.entities if not e.table_entry.key.fields]
            want = remap_ports(fig1_compiled.switches[r.switch.name],
                               ports_for(fig1_compiled, r.switch.name).dev_ports(
                                   {"1/0": FRONT_DEV}))
            ids = {t["id"] for t in BFRT["tables"]
                   if t["name"] in {f"pipe.{e.table}" for e in want.entries}}
            assert {te.table_id for te in reads} == ids | PRE_TABLES


def test_verify_names_missing_different_and_extra(fig1_compiled):
    with FakeBfRuntime({"1/0": FRONT_DEV}) as f1:
        _run(fig1_compiled, {"v1": f1})
        p4 = _p4_entries(f1)
        gone, changed = p4[0], p4[1]
        del f1.entries[f1._key(gone)]
        changed.data.fields[0].stream = bytes(len(changed.data.fields[0].stream))
        extra = PB2.TableEntry()
        extra.CopyFrom(p4[2])
        kf = extra.key.fields[0]
        part = kf.exact if kf.HasField("exact") else kf.lpm
        part.value = b"\xfe" * len(part.value)  # a key the plan does not have
        f1.entries[f1._key(extra)] = extra
        (r,) = verify(fig1_compiled, switches(fig1_compiled, {"v1": f1}), FILES, stubs=STUBS,
                      timeout=5)
        assert not r.clean
        assert [decode(te) for te in r.missing] == [decode(gone)]
        assert [decode(p)[:3] for p, _ in r.different] == [decode(changed)[:3]]
        assert [decode(te) for te in r.extra] == [decode(extra)]
        assert r.describe(gone).startswith(
            next(t["name"] for t in BFRT["tables"] if t["id"] == gone.table_id))


def test_uninstall_deletes_exactly_the_plan_and_is_idempotent(fig1_compiled):
    with FakeBfRuntime({"1/0": FRONT_DEV}) as f1, FakeBfRuntime({"1/0": FRONT_DEV}) as f2:
        fakes = {"v1": f1, "v2": f2}
        written = _run(fig1_compiled, fakes)
        ports_before = {n: [te for te in f.entries.values() if te.table_id == PORT_ID]
                        for n, f in fakes.items()}
        reports = uninstall(fig1_compiled, switches(fig1_compiled, fakes), FILES, stubs=STUBS,
                            timeout=5)
        for r in reports:
            fake = fakes[r.switch.name]
            assert r.deleted == written[r.switch.name]
            assert plan_entries(fake) == []
            assert [te for te in fake.entries.values() if te.table_id == PORT_ID] == \
                ports_before[r.switch.name]  # ports are not plan state
            # the DELETEs: P4 entries decode (by bfrt.json) to exactly the plan's, sent
            # before the groups, which go before the nodes they list
            ups = [u for req in fake.of(PB2.WriteRequest) for u in req.updates
                   if u.type == PB2.Update.DELETE]
            want = remap_ports(fig1_compiled.switches[r.switch.name],
                               ports_for(fig1_compiled, r.switch.name).dev_ports(
                                   {"1/0": FRONT_DEV}))
            p4 = [u.entity.table_entry for u in ups
                  if u.entity.table_entry.table_id not in FIXED]
            assert sorted(map(repr, map(decode, p4))) == sorted(map(repr, expected(want)))
            kinds = [FIXED.get(u.entity.table_entry.table_id, {"name": "p4"})["name"]
                     for u in ups]
            assert kinds == sorted(kinds, key=["p4", "$pre.mgid", "$pre.node"].index)
        again = uninstall(fig1_compiled, switches(fig1_compiled, fakes), FILES, stubs=STUBS,
                          timeout=5)
        assert [r.deleted for r in again] == [0, 0]


def test_uninstall_refuses_changed_entries_unless_forced(fig1_compiled):
    with FakeBfRuntime({"1/0": FRONT_DEV}) as f1:
        written = _run(fig1_compiled, {"v1": f1})
        changed = _p4_entries(f1)[0]
        changed.data.fields[0].stream = bytes(len(changed.data.fields[0].stream))
        sw = switches(fig1_compiled, {"v1": f1})
        with pytest.raises(BfrtReadbackError, match=r"1 entries have the plan's keys but "
                                                    r"other contents .*nothing was deleted"):
            uninstall(fig1_compiled, sw, FILES, stubs=STUBS, timeout=5)
        assert len(plan_entries(f1)) == written["v1"]
        (r,) = uninstall(fig1_compiled, sw, FILES, force=True, stubs=STUBS, timeout=5)
        assert r.deleted == written["v1"] and plan_entries(f1) == []


def test_failed_uninstall_restores_what_it_deleted(fig1_compiled):
    with FakeBfRuntime({"1/0": FRONT_DEV}) as f1, \
            FakeBfRuntime({"1/0": FRONT_DEV}, fail_deletes_after=5) as f2:
        fakes = {"v1": f1, "v2": f2}
        _run(fig1_compiled, fakes)
        before = {n: sorted(map(repr, plan_entries(f))) for n, f in fakes.items()}
        with pytest.raises(BfrtReadbackError, match=r"(?s)INTERNAL.*restored:.*v1: re-inserted"):
            uninstall(fig1_compiled, switches(fig1_compiled, fakes), FILES, stubs=STUBS,
                      timeout=5)
        assert {n: sorted(map(repr, plan_entries(f))) for n, f in fakes.items()} == before


def test_no_program_and_another_program(fig1_compiled):
    with FakeBfRuntime({"1/0": FRONT_DEV}) as f1:
        sw = switches(fig1_compiled, {"v1": f1})
        (r,) = verify(fig1_compiled, sw, FILES, stubs=STUBS, timeout=5)
        assert r.program == "none" and not r.clean
        (r,) = uninstall(fig1_compiled, sw, FILES, stubs=STUBS, timeout=5)
        assert r.deleted == 0
        f1.program = "someone_else"
        with pytest.raises(BfrtReadbackError, match="runs another program"):
            uninstall(fig1_compiled, sw, FILES, stubs=STUBS, timeout=5)
