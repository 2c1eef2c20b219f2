"""Install, verify and uninstall a plan on running switches, as one transaction over all of them.

Used by `inart install` / `inart uninstall` (control_plane/cli/install.py) on switches someone
else started (bmv2 ``simple_switch_grpc``, `inart switch`, hardware behind P4Runtime).

1. Connect to every switch as primary, with the user's election id.  A switch where another
   controller is primary with a higher id is an error before anything is written: P4Runtime
   would refuse our writes anyway, and taking over would need a higher id on purpose.
2. Read what each holds: its pipeline (our cookie, or the same P4Info and device config), every
   entry of every table of our P4Info and every multicast group.
3. Work out the changes: entries and groups that are present and equal are left alone (so a
   second run writes nothing), missing ones are inserted, present-but-different ones are an
   error for all switches at once, before any write, unless ``replace`` (then modified).
4. Write switch by switch: the pipeline where the switch has none or another one (it resets
   the registers, so the plan needs no register writes: slot state is managed in-band, DESIGN.md
   section 4), then the groups, then the entries, in batches of one Write RPC each.

Every applied update is journalled (from the per-update status a failed Write returns).  If any
write fails, or the run is interrupted, the journal is undone in reverse on every switch it
touched, and the error names the switch, the entity and the P4Runtime status, plus what could
not be undone (a switch that died cannot be reached; it lost its state with its process).  A
pipeline this run pushed stays (P4Runtime cannot remove one), without any of the plan's entries.
P4Runtime's own atomicity modes are not used: neither bmv2 nor the embedded target implement
them, and they would cover one Write RPC on one switch only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import grpc
from google.rpc import code_pb2

from control_plane.deploy.addressing import Addressing
from control_plane.deploy.entries import Compiled
from control_plane.deploy.pipeline import Pipeline
from control_plane.deploy.state import (
    Diff,
    Item,
    Key,
    StateError,
    desired_items,
    diff,
    read_items,
)
from control_plane.drivers.p4runtime import (
    P4Info,
    P4RuntimeClient,
    P4RuntimeError,
    encode_update,
)
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2

BATCH = 128  # updates per Write RPC
DEFAULT_ELECTION_ID = (0, 1)
UPDATE = p4runtime_pb2.Update
NOT_ANSWERING = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
# (switch, event, count): 'planned' (updates to write, all switches before any write),
# 'pipeline' (pushed), 'written' (a batch), 'done' (the switch's updates)
Progress = Callable[[str, str, int], None]


class DeployError(RuntimeError):
    """Bad input or a switch that cannot take the plan; nothing was left half-installed."""


class ConflictError(DeployError):
    """Switches hold entries with a plan's keys but other contents; nothing was written."""


# ---------------------------------------------------------------------------------------------
# which switch is where


@dataclass(frozen=True)
class SwitchAddress:
    """Where one of the plan's switches serves P4Runtime, and its device id there."""

    name: str
    address: str  # host:port
    device_id: int

    def label(self) -> str:
        return f"switch '{self.name}' ({self.address}, device {self.device_id})"


def parse_switch(text: str) -> tuple[str, str, int | None]:
    """``NAME=HOST:PORT[,device=N]`` -> (name, address, device id or None)."""
    name, eq, rest = text.partition("=")
    address, _, option = rest.partition(",")
    expected = "expected NAME=HOST:PORT[,device=N], e.g. v1=127.0.0.1:9559,device=1"
    host, colon, port = address.rpartition(":")
    if not eq or not name or not colon or not host or not port.isdigit() \
            or not 0 < int(port) < 65536:
        raise DeployError(f"--switch {text!r}: {expected}")
    device = None
    if option:
        key, _, value = option.partition("=")
        if key != "device" or not value.isdigit():
            raise DeployError(f"--switch {text!r}: option {option!r}: {expected}")
        device = int(value)
        if device >= 1 << 64:
            raise DeployError(f"--switch {text!r}: device id {device}: expected < 2^64")
    return name, address, device


def switch_addresses(specs: list[str], addressing: Addressing,
                     require_all: bool = True) -> dict[str, SwitchAddress]:
    """The plan's switches by name, in natural order; the device id defaults to the deploy
    layer's (the switch's number in natural id order, as `inart emulate` starts them)."""
    found: dict[str, SwitchAddress] = {}
    for text in specs:
        name, address, device = parse_switch(text)
        if name not in addressing.device_id:
            raise DeployError(f"--switch {text!r}: the plan has no switch '{name}' (switches: "
                              f"{', '.join(addressing.device_id)})")
        if name in found:
            raise DeployError(f"--switch {text!r}: switch '{name}' is given twice")
        found[name] = SwitchAddress(name, address, addressing.device_id[name]
                                    if device is None else device)
    missing = [sw for sw in addressing.device_id if sw not in found]
    if require_all and missing:
        raise DeployError(f"--switch: no address for switch(es) {', '.join(missing)}; the plan "
                          f"needs every switch (give --switch NAME=HOST:PORT for each)")
    return {sw: found[sw] for sw in addressing.device_id if sw in found}


def addressed_switches(addressing: Addressing) -> dict[str, SwitchAddress]:
    """Every switch where ``addressing`` put it (a network the testbed started itself, e.g.
    an emulation: switch i as device i on its loopback port)."""
    return {sw: SwitchAddress(sw, addressing.grpc_address(sw), device)
            for sw, device in addressing.device_id.items()}


def parse_election_id(text: str) -> tuple[int, int]:
    """``HIGH,LOW`` or ``LOW`` -> (high, low); P4Runtime election ids are 128-bit, not 0."""
    try:
        parts = [int(p, 0) for p in text.split(",")]
    except ValueError:
        parts = []
    if len(parts) == 1:
        parts = [0, *parts]
    if len(parts) != 2 or not all(0 <= p < 1 << 64 for p in parts) or parts == [0, 0]:
        raise DeployError(f"--election-id {text!r}: expected HIGH,LOW or LOW (64-bit "
                          f"integers, not both 0), e.g. 0,1")
    return parts[0], parts[1]


# ---------------------------------------------------------------------------------------------
# sessions and pipelines


def _connect_error(sw: SwitchAddress, client: P4RuntimeClient, exc: P4RuntimeError,
                   election_id: tuple[int, int]) -> DeployError:
    ours = f"{election_id[0]},{election_id[1]}"
    if client.arbitration_code == code_pb2.ALREADY_EXISTS:
        holder = client.primary_election_id
        who = f" with election id {holder[0]},{holder[1]}" if holder else ""
        return DeployError(f"{sw.label()}: another controller is primary{who}, higher than our "
                           f"election id {ours}; nothing was written. Stop that controller or "
                           f"take over on purpose with a higher --election-id")
    if exc.code == grpc.StatusCode.INVALID_ARGUMENT:
        return DeployError(f"{sw.label()}: another controller already uses election id {ours}: "
                           f"give a different --election-id ({exc})")
    if exc.code == grpc.StatusCode.NOT_FOUND:
        return DeployError(f"{sw.label()}: no device {sw.device_id} there; give the id the switch "
                           f"was started with: --switch {sw.name}={sw.address},device=N ({exc})")
    if exc.code == grpc.StatusCode.UNAVAILABLE:
        return DeployError(f"{sw.label()}: no P4Runtime server answers; is the switch running? "
                           f"({exc})")
    return DeployError(f"{sw.label()}: {exc}")


def open_client(sw: SwitchAddress, election_id: tuple[int, int], timeout: float,
                primary: bool = True) -> P4RuntimeClient:
    """A session with one switch: primary for writes, else only connected (reads need no
    arbitration, so verifying never disturbs the controller in charge)."""
    client = P4RuntimeClient(sw.address, sw.device_id, election_id, timeout)
    try:
        return client.connect() if primary else client.wait_ready()
    except P4RuntimeError as exc:
        client.close()
        raise _connect_error(sw, client, exc, election_id) from None


@contextmanager
def sessions(switches: dict[str, SwitchAddress], election_id: tuple[int, int], timeout: float,
             primary: bool = True) -> Iterator[dict[str, P4RuntimeClient]]:
    """Sessions with all switches (all or none), closed afterwards."""
    clients: dict[str, P4RuntimeClient] = {}
    try:
        for name, sw in switches.items():
            clients[name] = open_client(sw, election_id, timeout, primary)
        yield clients
    finally:
        for client in clients.values():
            client.close()


@dataclass(frozen=True)
class LoadedPipeline:
    """A pipeline's P4Info and device config in memory, with the cookie that tags it."""

    info: P4Info
    config: bytes
    cookie: int

    @classmethod
    def load(cls, pipeline: Pipeline) -> LoadedPipeline:
        pipeline.check()
        info = P4Info.load(pipeline.p4info)
        config = pipeline.device_config()
        digest = hashlib.sha256(info.proto.SerializeToString(deterministic=True) + config)
        return cls(info, config, int.from_bytes(digest.digest()[:8], "big"))


def pipeline_state(client: P4RuntimeClient, pipeline: LoadedPipeline) -> str:
    """'ours' (our cookie, or our P4Info and device config), 'none' or 'other'."""
    config = client.get_pipeline()
    if config is None:
        return "none"
    if config.cookie.cookie == pipeline.cookie:
        return "ours"
    # compared as bytes: message equality would unpack the `Any`s of a Tofino P4Info's
    # architecture externs, whose types only the SDE knows
    if config.p4info.SerializeToString(deterministic=True) != \
            pipeline.info.proto.SerializeToString(deterministic=True):
        return "other"
    full = client.get_pipeline(with_device_config=True)
    return "ours" if full is not None and full.p4_device_config == pipeline.config else "other"


# ---------------------------------------------------------------------------------------------
# changes, the journal and undo


@dataclass(frozen=True)
class Change:
    """One update: INSERT/MODIFY ``item``, or DELETE it; ``old`` is what a MODIFY replaces."""

    op: int
    item: Item
    old: Item | None = None

    def encoded(self) -> bytes:
        return encode_update(self.op, self.item.encoded)

    def undo(self) -> Change:
        if self.op == UPDATE.INSERT:
            return Change(UPDATE.DELETE, self.item)
        if self.op == UPDATE.DELETE:
            return Change(UPDATE.INSERT, self.item)
        assert self.old is not None
        return Change(UPDATE.MODIFY, self.old, self.item)

    def describe(self) -> str:
        return f"{UPDATE.Type.Name(self.op)} {self.item.what}"


class WriteFailure(DeployError):
    """A switch refused an update or could not be reached during the writes."""


@dataclass
class SwitchRun:
    """One switch within a run: its session, what it held, what we change and have changed."""

    switch: SwitchAddress
    client: P4RuntimeClient
    pipeline: str  # 'ours', 'none' or 'other' before the run
    diff: Diff
    changes: list[Change] = field(default_factory=list)
    push: bool = False
    pushed: bool = False
    applied: list[Change] = field(default_factory=list)  # the journal

    @property
    def touched(self) -> bool:
        return self.pushed or bool(self.applied)


def apply_changes(run: SwitchRun, changes: list[Change], progress: Progress | None = None,
                  tolerate: frozenset[int] = frozenset()) -> list[str]:
    """Write ``changes`` in batches, journalling every applied one in ``run.applied``.

    A refused update raises WriteFailure naming it, unless its code is in ``tolerate``: then
    it is skipped and listed in the returned notes (undoing an update whose fate a failed
    Write left unknown may find it undone already: NOT_FOUND, ALREADY_EXISTS).
    """
    notes: list[str] = []
    for start in range(0, len(changes), BATCH):
        batch = changes[start:start + BATCH]
        try:
            run.client.write_encoded([c.encoded() for c in batch],
                                     f"write of {len(batch)} updates")
        except P4RuntimeError as exc:
            if len(exc.errors) != len(batch):  # no per-update status: assume all applied
                run.applied.extend(batch)
                raise WriteFailure(f"{run.switch.label()}: a write of {len(batch)} updates (from "
                                   f"{batch[0].describe()}) failed: {exc}") from None
            refused = None
            for change, err in zip(batch, exc.errors, strict=True):
                if err.canonical_code == code_pb2.OK:
                    run.applied.append(change)
                elif err.canonical_code in tolerate:
                    notes.append(f"{change.describe()}: {code_pb2.Code.Name(err.canonical_code)}")
                elif refused is None:
                    refused = (change, err)
            if refused is not None:
                change, err = refused
                raise WriteFailure(
                    f"{run.switch.label()}: {change.describe()} refused: "
                    f"{code_pb2.Code.Name(err.canonical_code)}: {err.message}") from None
        else:
            run.applied.extend(batch)
        if progress is not None:
            progress(run.switch.name, "written", len(batch))
    return notes


def rollback(runs: list[SwitchRun]) -> list[str]:
    """Undo every run's journal in reverse (last switch first); one line per switch."""
    lines = []
    undone_already = frozenset({code_pb2.NOT_FOUND, code_pb2.ALREADY_EXISTS})
    for run in reversed(runs):
        if not run.touched:
            continue
        undo = [c.undo() for c in reversed(run.applied)]
        kept = " (it keeps the pipeline this run pushed)" if run.pushed else ""
        undone = SwitchRun(run.switch, run.client, run.pipeline, run.diff)
        try:
            skipped = apply_changes(undone, undo, tolerate=undone_already)
            already = f", {len(skipped)} were undone already" if skipped else ""
            lines.append(f"{run.switch.name}: undid {len(undo) - len(skipped)} update(s)"
                         f"{already}{kept}")
        except (WriteFailure, P4RuntimeError) as exc:
            lines.append(f"{run.switch.name}: could NOT undo all {len(undo)} update(s){kept}: "
                         f"{exc}")
    return lines


def _fail(runs: list[SwitchRun], error: BaseException, what: str) -> DeployError:
    lines = rollback(runs)
    text = f"{what}: {error}"
    if lines:
        text += "\nrolled back:\n  " + "\n  ".join(lines)
    else:
        text += "\nnothing had been written"
    return WriteFailure(text)


def _execute(runs: list[SwitchRun], pipeline: LoadedPipeline, what: str,
             progress: Progress | None) -> None:
    """Write every run's changes; on any failure (or Ctrl-C) undo all and raise."""
    try:
        for run in runs:
            if run.push:
                try:
                    run.client.set_pipeline(pipeline.info, pipeline.config, pipeline.cookie)
                except P4RuntimeError as exc:
                    sw = run.switch
                    hint = "" if exc.code in NOT_ANSWERING else (
                        f" (was the switch started as device {sw.device_id}? else give "
                        f"--switch {sw.name}={sw.address},device=N)")
                    raise WriteFailure(f"{sw.label()}: pipeline push refused: {exc}"
                                       f"{hint}") from None
                run.pushed = True
                if progress is not None:
                    progress(run.switch.name, "pipeline", 0)
            apply_changes(run, run.changes, progress)
            if progress is not None:
                progress(run.switch.name, "done", len(run.changes))
    except (WriteFailure, P4RuntimeError) as exc:
        raise _fail(runs, exc, f"{what} failed") from None
    except KeyboardInterrupt:
        raise _fail(runs, KeyboardInterrupt("Ctrl-C"), f"{what} interrupted") from None
    except BaseException as exc:  # a bug: still leave nothing half-installed behind
        _fail(runs, exc, f"{what} crashed")
        raise


def _ordered(changes: list[Change]) -> list[Change]:
    """Groups before entries when adding, entries before groups when deleting."""
    adds = [c for c in changes if c.op != UPDATE.DELETE]
    deletes = [c for c in changes if c.op == UPDATE.DELETE]
    return ([c for c in adds if c.item.is_group] + [c for c in adds if not c.item.is_group]
            + [c for c in deletes if not c.item.is_group] + [c for c in deletes if c.item.is_group])


def _conflicts(runs: list[SwitchRun], flag: str, limit: int = 5) -> ConflictError | None:
    lines = []
    for run in runs:
        if not run.diff.different:
            continue
        lines.append(f"{run.switch.label()}: {len(run.diff.different)} item(s) differ from "
                     f"the plan:")
        for plan, there in run.diff.different[:limit]:
            lines.append(f"  plan:   {plan.what}\n  switch: {there.what}")
        if len(run.diff.different) > limit:
            lines.append(f"  ... and {len(run.diff.different) - limit} more")
    if not lines:
        return None
    return ConflictError("\n".join(lines) + f"\nnothing was written; give {flag} to overwrite")


# ---------------------------------------------------------------------------------------------
# the three operations


@dataclass
class SwitchReport:
    """What an operation found and did on one switch (printed as a line or JSON)."""

    switch: SwitchAddress
    pipeline: str  # before: 'ours', 'none', 'other'
    pushed: bool = False
    written: dict[str, int] = field(default_factory=dict)  # INSERT/MODIFY/DELETE -> count
    unchanged: int = 0  # plan items on the switch that the operation left as they were
    extra: int = 0  # items on the switch that the plan does not have (left alone)
    diff: Diff | None = None  # verify only

    def to_dict(self) -> dict:
        out = {"address": self.switch.address, "device_id": self.switch.device_id,
               "pipeline": self.pipeline, "pushed": self.pushed, "written": self.written,
               "unchanged": self.unchanged, "extra": self.extra}
        if self.diff is not None:
            out["missing"] = [i.what for i in self.diff.missing]
            out["extra"] = [i.what for i in self.diff.extra]
            out["different"] = [{"plan": p.what, "switch": s.what}
                                for p, s in self.diff.different]
        return out


def _report(run: SwitchRun, unchanged: int) -> SwitchReport:
    written: dict[str, int] = {}
    for change in run.applied:
        name = UPDATE.Type.Name(change.op).lower()
        written[name] = written.get(name, 0) + 1
    return SwitchReport(run.switch, run.pipeline, run.pushed, written, unchanged,
                        len(run.diff.extra))


def _want(compiled: Compiled, name: str, info: P4Info) -> dict[Key, Item]:
    if name not in compiled.switches:
        raise DeployError(f"switch '{name}': the compiled plan has no such switch")
    try:
        return desired_items(info, compiled.switches[name])
    except StateError as exc:  # checked before any switch is written
        raise DeployError(f"{exc} (is the P4Info the program the plan was compiled for?); "
                          f"nothing was written") from None


def _planned_runs(compiled: Compiled, switches: dict[str, SwitchAddress],
                  loaded: LoadedPipeline, clients: dict[str, P4RuntimeClient],
                  plan_switch: Callable[[SwitchAddress, P4RuntimeClient, str, dict[Key, Item]],
                                        SwitchRun],
                  progress: Progress | None) -> list[SwitchRun]:
    """One run per switch: what ``plan_switch`` decides from its pipeline state and the
    plan's items for it; nothing is written yet."""
    runs = []
    for name, client in clients.items():
        want = _want(compiled, name, loaded.info)
        client.use_p4info(loaded.info)
        runs.append(plan_switch(switches[name], client, pipeline_state(client, loaded), want))
        if progress is not None:
            progress(name, "planned", len(runs[-1].changes))
    return runs


def _commit(runs: list[SwitchRun], loaded: LoadedPipeline, what: str,
            conflicts_flag: str | None, progress: Progress | None) -> None:
    """Refuse conflicts (unless ``conflicts_flag`` is None: the user overrode them), then
    write every run all or nothing."""
    conflict = _conflicts(runs, conflicts_flag) if conflicts_flag else None
    if conflict is not None:
        raise conflict
    _execute(runs, loaded, what, progress)


def install(compiled: Compiled, switches: dict[str, SwitchAddress], pipeline: Pipeline,
            election_id: tuple[int, int] = DEFAULT_ELECTION_ID, *, replace: bool = False,
            reset: bool = False, timeout: float = 15.0,
            progress: Progress | None = None) -> list[SwitchReport]:
    """Put the plan's pipeline, groups and entries on ``switches``; all or nothing.

    ``reset`` pushes the pipeline even where it is ours (zeroing registers and counters and
    removing every entry, also other controllers'); ``replace`` overwrites entries and groups
    that have the plan's keys but other contents.
    """
    loaded = LoadedPipeline.load(pipeline)

    def plan_switch(sw: SwitchAddress, client: P4RuntimeClient, state: str,
                    want: dict[Key, Item]) -> SwitchRun:
        push = reset or state != "ours"
        have = {} if push else read_items(client, loaded.info)
        run = SwitchRun(sw, client, state, diff(want, have), push=push)
        run.changes = _ordered(
            [Change(UPDATE.INSERT, item) for item in run.diff.missing]
            + [Change(UPDATE.MODIFY, plan, there) for plan, there in run.diff.different])
        return run

    with sessions(switches, election_id, timeout) as clients:
        runs = _planned_runs(compiled, switches, loaded, clients, plan_switch, progress)
        _commit(runs, loaded, "install", "--replace" if not replace else None, progress)
        return [_report(run, len(run.diff.equal)) for run in runs]


def uninstall(compiled: Compiled, switches: dict[str, SwitchAddress], pipeline: Pipeline,
              election_id: tuple[int, int] = DEFAULT_ELECTION_ID, *, force: bool = False,
              timeout: float = 15.0, progress: Progress | None = None) -> list[SwitchReport]:
    """Remove exactly the plan's entries and groups (those present and equal; with ``force``
    also those with the plan's keys but other contents); all or nothing."""
    loaded = LoadedPipeline.load(pipeline)

    def plan_switch(sw: SwitchAddress, client: P4RuntimeClient, state: str,
                    want: dict[Key, Item]) -> SwitchRun:
        if state == "other":
            raise DeployError(f"{sw.label()} runs another pipeline: the plan's entries cannot "
                              f"be told apart there; nothing was removed")
        have = {} if state == "none" else read_items(client, loaded.info)
        run = SwitchRun(sw, client, state, diff(want, have))
        gone = run.diff.equal + ([p for p, _ in run.diff.different] if force else [])
        run.changes = _ordered([Change(UPDATE.DELETE, have[item.key]) for item in gone])
        return run

    with sessions(switches, election_id, timeout) as clients:
        runs = _planned_runs(compiled, switches, loaded, clients, plan_switch, progress)
        _commit(runs, loaded, "uninstall", "--force" if not force else None, progress)
        return [_report(run, len(run.diff.equal) + len(run.diff.different) - len(run.changes))
                for run in runs]


def verify(compiled: Compiled, switches: dict[str, SwitchAddress], pipeline: Pipeline,
           timeout: float = 15.0) -> list[SwitchReport]:
    """Read every switch back and compare with the plan (no arbitration, no writes)."""
    loaded = LoadedPipeline.load(pipeline)
    reports = []
    with sessions(switches, DEFAULT_ELECTION_ID, timeout, primary=False) as clients:
        for name, client in clients.items():
            want = _want(compiled, name, loaded.info)
            client.use_p4info(loaded.info)
            try:
                state = pipeline_state(client, loaded)
                have = read_items(client, loaded.info) if state == "ours" else {}
            except P4RuntimeError as exc:
                raise DeployError(f"{switches[name].label()}: read failed: {exc}") from None
            d = diff(want, have)
            reports.append(SwitchReport(switches[name], state, unchanged=len(d.equal),
                                        extra=len(d.extra), diff=d))
    return reports


def verify_clean(reports: list[SwitchReport]) -> bool:
    """True when every switch runs our pipeline and holds exactly the plan."""
    return all(r.pipeline == "ours" and r.diff is not None and r.diff.clean for r in reports)
