"""Verify and uninstall a plan over BF Runtime, as control_plane/deploy/transaction does over
P4Runtime: read the switch back and compare with the plan's entries; delete exactly what the
plan installed.

The plan's entries are built as install builds them (install._plan_entries: the deploy layer's
entries, ports through the ports file and ``$PORT_STR_INFO``, PRE nodes and groups), so verify
compares the very messages install wrote. No BIND: every Read and Write names the program
(``p4_name``), so verify works while another client holds the program. Every table the plan
writes to is read whole (a Read with the table id and no key); an entry is *equal* when the
switch has its key with the same action and the plan's data fields at the same values (fields
the switch adds in its answer, e.g. defaults, are not compared), *different* when the key is
there with other contents, *missing* when not; entries of those tables the plan does not have
are *extra*. Uninstall deletes the equal ones (and with ``force`` the different ones): table
entries first, then multicast groups, then PRE nodes; all or nothing across the switches (a
failed delete re-inserts what this run deleted). Running it again deletes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from control_plane.deploy.entries import Compiled
from control_plane.drivers.bfrt.client import BfrtClient, BfrtError
from control_plane.drivers.bfrt.entities import PRE_MGID, PRE_NODE
from control_plane.drivers.bfrt.info import BfrtInfo, BfrtInfoError
from control_plane.drivers.bfrt.install import (
    BATCH,
    BfrtInstallError,
    BfrtSwitch,
    _plan_entries,
    _Run,
    resolve_dev_ports,
)
from control_plane.drivers.bfrt.sde import BfrtStubs, load_stubs
from control_plane.drivers.tofino.stratum import P4_NAME, TofinoFiles


class BfrtReadbackError(BfrtInstallError):
    """Verify or uninstall failed; the message names the switch (and what was restored)."""


@dataclass
class BfrtReport:
    """One switch compared with the plan (and, for uninstall, what was deleted)."""

    switch: BfrtSwitch
    program: str  # 'ours', 'none' (no program loaded) or 'other' (another program's name)
    equal: list = field(default_factory=list)  # TableEntry messages as planned
    different: list = field(default_factory=list)  # (plan's, switch's)
    missing: list = field(default_factory=list)
    extra: list = field(default_factory=list)
    deleted: int = 0
    info: BfrtInfo | None = None  # the program's and the device's tables, once read

    @property
    def clean(self) -> bool:
        return self.program == "ours" and not (self.different or self.missing or self.extra)

    def describe(self, te) -> str:
        """``table(key=value, ...)`` of one entry, for reports."""
        return self.info.describe(te) if self.info is not None else f"table id {te.table_id}"


def _key(te) -> tuple:
    """Table id and key fields, in field id order (a switch may answer in another order)."""
    return te.table_id, tuple(sorted((kf.field_id, kf.SerializeToString(deterministic=True))
                                     for kf in te.key.fields))


def same(plan, there) -> bool:
    """Same action and every data field of the plan's entry at the same value there."""
    if plan.data.action_id != there.data.action_id:
        return False
    have = {f.field_id: f.SerializeToString(deterministic=True) for f in there.data.fields}
    return all(have.get(f.field_id) == f.SerializeToString(deterministic=True)
               for f in plan.data.fields)


def _program_state(config) -> str:
    """What a GetForwardingPipelineConfigResponse says runs: our program, another, none."""
    names = [c.p4_name for c in config.config]
    return "ours" if P4_NAME in names else "other" if names else "none"


def _compare(run: _Run, compiled: Compiled, bfrt_json: bytes) -> BfrtReport:
    """Read the switch back (bound to our program) and sort the plan's entries."""
    config = run.client.get_config()
    report = BfrtReport(run.switch, _program_state(config))
    if report.program != "ours":
        return report
    run.info = run.client.info = report.info = BfrtInfo.from_bytes(
        bfrt_json, config.non_p4_config.bfruntime_info)
    want = _plan_entries(run, compiled, resolve_dev_ports(run))
    pb2 = run.client.pb2
    have = {}
    for table_id in dict.fromkeys(te.table_id for te in want):
        for te in run.client.read([pb2.TableEntry(table_id=table_id)], P4_NAME,
                                  f"table {getattr(run.info.by_id(table_id), 'name', table_id)}"):
            have[_key(te)] = te
    planned = set()
    for te in want:
        k = _key(te)
        planned.add(k)
        if k not in have:
            report.missing.append(te)
        elif same(te, have[k]):
            report.equal.append(have[k])
        else:
            report.different.append((te, have[k]))
    report.extra = [te for k, te in have.items() if k not in planned]
    return report


def _sessions(switches: list[BfrtSwitch], stubs: BfrtStubs | None, timeout: float
              ) -> list[_Run]:
    stubs = stubs or load_stubs()
    runs = []
    try:
        for sw in switches:
            runs.append(_Run(sw, BfrtClient(stubs, sw.address, sw.device_id,
                                            timeout=timeout).connect()))
    except BfrtError:
        for run in runs:
            run.client.close()
        raise
    return runs


def verify(compiled: Compiled, switches: list[BfrtSwitch], files: TofinoFiles, *,
           stubs: BfrtStubs | None = None, timeout: float = 20.0) -> list[BfrtReport]:
    """Every switch read back and compared with the plan; writes nothing."""
    files.check()
    runs = _sessions(switches, stubs, timeout)
    try:
        return [_compare(run, compiled, files.bfrt_json.read_bytes()) for run in runs]
    except (BfrtError, BfrtInfoError) as exc:
        raise BfrtReadbackError(f"BF Runtime verify failed: {exc}") from None
    finally:
        for run in runs:
            run.client.close()


def uninstall(compiled: Compiled, switches: list[BfrtSwitch], files: TofinoFiles, *,
              force: bool = False, stubs: BfrtStubs | None = None,
              timeout: float = 20.0) -> list[BfrtReport]:
    """Delete the plan's entries from every switch (those equal to the plan's; with ``force``
    also those with its keys but other contents); all or nothing."""
    files.check()
    runs = _sessions(switches, stubs, timeout)
    deleted: list[tuple[_Run, list]] = []
    try:
        reports = [_compare(run, compiled, files.bfrt_json.read_bytes()) for run in runs]
        for report in reports:
            if report.program == "other":
                raise BfrtReadbackError(f"switch '{report.switch.name}' ({report.switch.address})"
                                        f" runs another program: the plan's entries cannot be "
                                        f"told apart there; nothing was deleted")
        conflicts = [(r, p) for r in reports for p, _ in r.different]
        if conflicts and not force:
            lines = [f"{r.switch.name}: {r.describe(p)}" for r, p in conflicts[:5]]
            raise BfrtReadbackError(f"{len(conflicts)} entries have the plan's keys but other "
                                    f"contents (--force deletes them too); nothing was "
                                    f"deleted:\n  " + "\n  ".join(lines))
        for run, report in zip(runs, reports, strict=True):
            gone = report.equal + ([there for _, there in report.different] if force else [])
            pre = {run.info.table(PRE_MGID).id: 1, run.info.table(PRE_NODE).id: 2} \
                if run.info is not None else {}
            gone.sort(key=lambda te: pre.get(te.table_id, 0))
            done: list = []
            deleted.append((run, done))
            for start in range(0, len(gone), BATCH):
                batch = gone[start:start + BATCH]
                run.maybe = batch  # a failed Write may have deleted some of them
                run.client.write(run.client.pb2.Update.DELETE, batch, P4_NAME,
                                 f"{len(batch)} plan entries")
                done.extend(batch)
                run.maybe = []
            report.deleted = len(done)
        return reports
    except (BfrtError, BfrtInfoError) as exc:
        lines = _restore(deleted)
        done = "\nrestored:\n  " + "\n  ".join(lines) if lines else "\nnothing was deleted"
        raise BfrtReadbackError(f"BF Runtime uninstall failed: {exc}{done}") from None
    finally:
        for run in runs:
            run.client.close()


def _restore(deleted: list[tuple[_Run, list]]) -> list[str]:
    """Re-insert what a failed uninstall deleted (nodes before the groups listing them)."""
    lines = []
    for run, done in reversed(deleted):
        for te in reversed(run.maybe):
            try:
                run.client.write(run.client.pb2.Update.INSERT, [te], P4_NAME, "restore")
            except BfrtError:
                pass  # it was not deleted
        if not done:
            continue
        try:
            for te in reversed(done):
                run.client.write(run.client.pb2.Update.INSERT, [te], P4_NAME, "restore")
            lines.append(f"{run.switch.name}: re-inserted {len(done)} entries")
        except BfrtError as exc:
            lines.append(f"{run.switch.name}: could NOT re-insert all {len(done)} entries: "
                         f"{exc}")
    return lines
