"""The service's one door to the switches: read back, diff, write (level-triggered).

Everything the service installs goes through ``sync``: given what a switch should hold (the
network's ``route_dst`` plus every installed plan version's entries and groups) it compares
with what the switch holds and writes only the difference: groups first, then entries
(insert/modify), then deletions (entries, then groups).  Make-before-break is two syncs: one
whose desired state holds both versions, and one, after the old version drained, without it.
Reconcile is the same sync with a fresh read-back, so a switch that restarted gets its
entries again and a restarted service adds nothing twice.

``Installer`` is the small interface behind it: ``P4RuntimeInstaller`` talks P4Runtime to real
switches (embedded target, bmv2, anything with our P4Info); ``MemoryInstaller`` holds switch
state in memory for `inart serve --switches memory`, the tests and the bench.  The atomic
`inart install` layer (control_plane/deploy, branch `install`) can replace the P4Runtime side
of this module when it lands: it reads and compares state in the same key/value form.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

import grpc

from control_plane.deploy.entries import Entry, Group, SwitchEntries
from control_plane.deploy.pipeline import Pipeline
from control_plane.drivers.p4runtime import (
    P4Info,
    P4RuntimeClient,
    P4RuntimeError,
    build_table_entry,
    decode_value,
    encode_value,
    multicast_group_update,
)
from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from control_plane.service.network import SwitchInfo

log = logging.getLogger(__name__)

BATCH = 128  # updates per Write RPC
OWNED_TABLES = ("InaIngress.route_pair", "InaIngress.route_dst", "InaIngress.ina_aggregate",
                "InaIngress.result_multicast", "InaEgress.result_rewrite")
INSERT, MODIFY, DELETE = (p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY,
                          p4runtime_pb2.Update.DELETE)
Key = tuple


class SwitchError(RuntimeError):
    """A switch did not answer (``reachable`` False) or refused a request; the message names
    it and why."""

    def __init__(self, message: str, reachable: bool = True) -> None:
        super().__init__(message)
        self.reachable = reachable


@dataclass(frozen=True)
class Item:
    """One table entry or multicast group: identity (key) and contents (value), as integers so
    a server that pads its bytestrings compares equal to one that sends canonical ones.
    ``source`` is what it was made from: a plan's Entry or Group, or the TableEntry or
    multicast group read from a switch; its P4Runtime message is only built to be written."""

    key: Key
    value: tuple
    source: Entry | Group | p4runtime_pb2.TableEntry = field(compare=False)

    def entity(self, info: P4Info) -> p4runtime_pb2.Entity:
        """The P4Runtime message: from the key and value for a plan's entry (they hold every
        id and value, so no name lookups), as read for a read-back one."""
        src = self.source
        if isinstance(src, Group):
            return multicast_group_update(src.group_id, list(src.replicas)).entity
        entity = p4runtime_pb2.Entity()
        te = entity.table_entry
        if isinstance(src, Entry):
            _, te.table_id, match, te.priority = self.key
            for fid, kind, value, *prefix in match:
                fm = te.match.add(field_id=fid)
                if kind == "lpm":
                    fm.lpm.value, fm.lpm.prefix_len = _canonical(value), prefix[0]
                else:
                    fm.exact.value = _canonical(value)
            action_id, params = self.value
            te.action.action.action_id = action_id
            for pid, value in params:
                te.action.action.params.add(param_id=pid, value=_canonical(value))
        else:  # read back: its key and action only (no counters)
            te.table_id, te.priority = src.table_id, src.priority
            te.match.extend(src.match)
            te.action.CopyFrom(src.action)
        return entity


def _canonical(number: int) -> bytes:
    """P4Runtime's canonical bytestring of a value (widths were checked building the Item)."""
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def _match_key(fm: p4runtime_pb2.FieldMatch) -> tuple:
    kind = fm.WhichOneof("field_match_type")
    m = getattr(fm, kind)
    if kind == "lpm":
        return (fm.field_id, kind, decode_value(m.value), m.prefix_len)
    if kind in ("exact", "optional"):
        return (fm.field_id, kind, decode_value(m.value))
    return (fm.field_id, kind, m.SerializeToString(deterministic=True))


def table_item(te: p4runtime_pb2.TableEntry) -> Item:
    """The Item of a table entry read from a switch."""
    act = te.action.action
    value = (act.action_id, tuple(sorted((p.param_id, decode_value(p.value))
                                         for p in act.params)))
    return Item(("table", te.table_id, tuple(sorted(_match_key(fm) for fm in te.match)),
                 te.priority), value, te)


def group_item(group: Group) -> Item:
    return Item(("group", group.group_id), tuple(sorted(group.replicas)), group)


class ItemCache:
    """What a switch should hold, as Items, computed from P4Info ids and integer values
    without building P4Runtime messages (pure-Python protobuf, which the project used before
    protobuf 6, made those the slowest part of a re-plan), and remembered per entry: successive
    versions and the network's routes share most entries."""

    LIMIT = 1 << 20  # items remembered before the cache starts over

    def __init__(self, info: P4Info) -> None:
        self.info = info
        self.memo: dict[Entry | Group, Item] = {}
        self.fields: dict[str, tuple[int, dict[str, tuple[int, int, int]]]] = {}
        self.params: dict[str, tuple[int, dict[str, tuple[int, int]]]] = {}

    def _table(self, name: str) -> tuple[int, dict[str, tuple[int, int, int]]]:
        if name not in self.fields:
            t = self.info.table(name)
            self.fields[name] = (t.preamble.id, {f.name: (f.id, f.match_type, f.bitwidth)
                                                 for f in t.match_fields})
        return self.fields[name]

    def _action(self, name: str) -> tuple[int, dict[str, tuple[int, int]]]:
        if name not in self.params:
            a = self.info.action(name)
            self.params[name] = (a.preamble.id, {p.name: (p.id, p.bitwidth) for p in a.params})
        return self.params[name]

    def _entry_item(self, e: Entry) -> Item:
        table_id, fields = self._table(e.table)
        match = []
        for name, raw in e.match:
            fid, kind, width = fields[name]
            what = f"{e.table} field '{name}'"
            if kind == p4info_pb2.MatchField.LPM:
                addr, _, plen = str(raw).partition("/")
                prefix = int(plen) if plen else width
                number = decode_value(encode_value(addr, width, what))
                mask = ((1 << prefix) - 1) << (width - prefix)
                match.append((fid, "lpm", number & mask, prefix))
            elif kind == p4info_pb2.MatchField.EXACT:
                match.append((fid, "exact", decode_value(encode_value(raw, width, what))))
            else:
                return table_item(build_table_entry(self.info, e.table, dict(e.match),
                                                    e.action, dict(e.params)))
        action_id, params = self._action(e.action)
        value = (action_id, tuple(sorted(
            (params[n][0], decode_value(encode_value(v, params[n][1], f"{e.action}.{n}")))
            for n, v in e.params)))
        return Item(("table", table_id, tuple(sorted(match)), 0), value, e)

    def item(self, thing: Entry | Group) -> Item:
        item = self.memo.get(thing)
        if item is None:
            item = group_item(thing) if isinstance(thing, Group) else self._entry_item(thing)
            if len(self.memo) >= self.LIMIT:
                self.memo.clear()
            self.memo[thing] = item
        return item

    def items(self, parts: Iterable[SwitchEntries]) -> dict[Key, Item]:
        """The entries and groups of every part, by key."""
        out: dict[Key, Item] = {}
        for part in parts:
            for thing in (*part.groups, *part.entries):
                item = self.item(thing)
                out[item.key] = item
        return out


@dataclass
class Change:
    kind: int  # INSERT, MODIFY or DELETE
    item: Item

    def update(self, info: P4Info) -> p4runtime_pb2.Update:
        update = p4runtime_pb2.Update(type=self.kind)
        update.entity.CopyFrom(self.item.entity(info))
        return update


def changes(want: dict[Key, Item], have: dict[Key, Item]) -> list[Change]:
    """Writes that turn ``have`` into ``want``, in an order that never references a missing
    group: groups in, entries in/modified, entries out, groups out."""
    ins = [Change(INSERT, i) for k, i in want.items() if k not in have]
    mod = [Change(MODIFY, i) for k, i in want.items() if k in have and have[k].value != i.value]
    dels = [Change(DELETE, i) for k, i in have.items() if k not in want]

    def groups_first(c: Change) -> bool:
        return c.item.key[0] == "group"
    return ([c for c in ins + mod if groups_first(c)] + [c for c in ins + mod if not
                                                        groups_first(c)]
            + [c for c in dels if not groups_first(c)] + [c for c in dels if groups_first(c)])


class Installer(Protocol):
    """Reads and writes one switch at a time; raises SwitchError on failure."""

    def read(self, switch: SwitchInfo) -> dict[Key, Item] | None:
        """Every entry of our tables and every multicast group; None: no program loaded."""

    def probe(self, switch: SwitchInfo) -> None:
        """Whether the switch answers now (raises SwitchError if not), even one that did not
        answer a moment ago."""

    def push_pipeline(self, switch: SwitchInfo) -> None:
        """Load our program (this empties the switch)."""

    def write(self, switch: SwitchInfo, changes: list[Change]) -> None: ...

    def close(self) -> None: ...


@dataclass
class SyncResult:
    """What one sync did to one switch."""

    name: str
    reachable: bool = True
    pipeline_pushed: bool = False
    inserted: int = 0
    modified: int = 0
    deleted: int = 0
    error: str = ""

    @property
    def writes(self) -> int:
        return self.inserted + self.modified + self.deleted


def sync(installer: Installer, switch: SwitchInfo, want: dict[Key, Item],
         known: dict[Key, Item] | None) -> tuple[SyncResult, dict[Key, Item] | None]:
    """Make ``switch`` hold exactly ``want``; ``known`` (what it held after the last sync)
    saves the read-back, None forces one (and a write that fails on ``known`` is retried once
    after a read-back: the switch may have restarted since; not when it did not answer, which
    would only wait for its timeout again).  Returns what was done and the
    new known state (None after a failure: the next sync reads the switch back)."""
    result = SyncResult(switch.name)
    todo: list[Change] = []
    for attempt in (known, None) if known is not None else (None,):
        try:
            have = attempt if attempt is not None else installer.read(switch)
            if have is None:
                installer.push_pipeline(switch)
                result.pipeline_pushed = True
                have = {}
            todo = changes(want, have)
            installer.write(switch, todo)
            result.error, result.reachable = "", True
            break
        except SwitchError as exc:
            result.reachable, result.error = exc.reachable, str(exc)
            if not exc.reachable:
                break  # a read-back cannot help a switch that does not answer
    if result.error:
        return result, None
    for c in todo:
        if c.kind == INSERT:
            result.inserted += 1
        elif c.kind == MODIFY:
            result.modified += 1
        else:
            result.deleted += 1
    return result, dict(want)


# ---------------------------------------------------------------------------------------------
# P4Runtime


class P4RuntimeInstaller:
    """One primary P4Runtime session per switch, opened on first use and again after a
    failure.  A switch that did not answer is not waited for again for ``holdoff`` seconds
    (calls fail at once, saying so) unless probed: every wait is ``timeout`` seconds of the
    service's one operation at a time, and the reconcile probes such switches beside it.
    Calls for one switch are serialised (a probe runs beside the service's operations)."""

    def __init__(self, pipeline: Pipeline, election_id: tuple[int, int] = (0, 1),
                 timeout: float = 5.0, holdoff: float = 10.0) -> None:
        self.pipeline = pipeline
        self.info = P4Info.load(pipeline.p4info)
        self.owned = {self.info.table(t).preamble.id for t in OWNED_TABLES}
        self.election_id = election_id
        self.timeout, self.holdoff = timeout, holdoff
        self.clients: dict[str, P4RuntimeClient] = {}
        self.silent: dict[str, tuple[float, str]] = {}  # switch -> (when, why) it did not answer
        self.locks: dict[str, threading.Lock] = {}
        self.guard = threading.Lock()

    @contextmanager
    def _one(self, switch: SwitchInfo, probe: bool = False) -> Iterator[None]:
        """Hold the switch's lock, unless it was silent lately and this is no probe: then
        fail at once (without waiting for a probe that holds the lock)."""
        if not probe:
            self._refuse_silent(switch)
        with self.guard:
            lock = self.locks.setdefault(switch.name, threading.Lock())
        with lock:
            if not probe:
                self._refuse_silent(switch)
            yield

    def _refuse_silent(self, switch: SwitchInfo) -> None:
        silent = self.silent.get(switch.name)
        if silent is not None and time.monotonic() - silent[0] < self.holdoff:
            raise SwitchError(f"{silent[1]} (not tried again for {self.holdoff:g} s; the next "
                              f"reconcile does)", reachable=False)

    def _client(self, switch: SwitchInfo) -> P4RuntimeClient:
        client = self.clients.get(switch.name)
        if client is not None and (client.address, client.device_id) == (switch.address,
                                                                           switch.device_id):
            return client
        self._drop(switch.name)
        client = P4RuntimeClient(switch.address, switch.device_id, self.election_id,
                                 timeout=self.timeout)
        try:
            client.connect()
        except P4RuntimeError as exc:
            client.close()
            raise self._silent(switch, f"switch '{switch.name}' ({switch.address}): "
                                       f"{exc}") from None
        client.use_p4info(self.info)
        self.clients[switch.name] = client
        self.silent.pop(switch.name, None)
        return client

    def _silent(self, switch: SwitchInfo, why: str) -> SwitchError:
        self.silent[switch.name] = time.monotonic(), why
        return SwitchError(why, reachable=False)

    def _drop(self, name: str) -> None:
        client = self.clients.pop(name, None)
        if client is not None:
            client.close()

    def _fail(self, switch: SwitchInfo, what: str, exc: P4RuntimeError) -> SwitchError:
        self._drop(switch.name)
        why = f"switch '{switch.name}' ({switch.address}): {what}: {exc}"
        if exc.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return self._silent(switch, why)
        return SwitchError(why)

    def probe(self, switch: SwitchInfo) -> None:
        with self._one(switch, probe=True):
            self._read(switch)

    def read(self, switch: SwitchInfo) -> dict[Key, Item] | None:
        with self._one(switch):
            return self._read(switch)

    def _read(self, switch: SwitchInfo) -> dict[Key, Item] | None:
        client = self._client(switch)
        tables, groups = p4runtime_pb2.Entity(), p4runtime_pb2.Entity()
        tables.table_entry.table_id = 0  # wildcard: every table
        groups.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        try:
            found = client.read(tables, "table entries") + client.read(groups, "groups")
        except P4RuntimeError as exc:
            if exc.code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                # no pipeline (a restarted switch) or another program's: its new process
                # has not seen our arbitration either, so the push opens a fresh session
                self._drop(switch.name)
                return None
            raise self._fail(switch, "read back", exc) from None
        out: dict[Key, Item] = {}
        for entity in found:
            if entity.HasField("table_entry"):
                te = entity.table_entry
                if te.is_default_action or te.table_id not in self.owned:
                    continue
                item = table_item(te)
            else:
                g = entity.packet_replication_engine_entry.multicast_group_entry
                item = group_item(Group(g.multicast_group_id, tuple(
                    (r.egress_port, r.instance) for r in g.replicas), "read back"))
            out[item.key] = item
        return out

    def push_pipeline(self, switch: SwitchInfo) -> None:
        with self._one(switch):
            client = self._client(switch)
            try:
                client.set_pipeline(self.info, self.pipeline.device_config())
            except P4RuntimeError as exc:
                raise self._fail(switch, "pipeline push", exc) from None

    def write(self, switch: SwitchInfo, changes: list[Change]) -> None:
        if not changes:
            return
        with self._one(switch):
            client = self._client(switch)
            for i in range(0, len(changes), BATCH):
                batch = changes[i:i + BATCH]
                try:
                    client.write([c.update(self.info) for c in batch],
                                 f"write of {len(batch)} updates")
                except P4RuntimeError as exc:
                    raise self._fail(switch, "write", exc) from None

    def close(self) -> None:
        for name in list(self.clients):
            self._drop(name)


# ---------------------------------------------------------------------------------------------
# in memory


class MemoryInstaller:
    """Switches held in memory, with a real device's write semantics (an INSERT of an existing
    key or a DELETE of a missing one fails), so tests catch a duplicate or a lost entry."""

    def __init__(self) -> None:
        self.state: dict[str, dict[Key, Item] | None] = {}  # None: no program loaded
        self.down: set[str] = set()  # switches that do not answer
        self.writes = 0  # updates applied, for tests and the bench

    def _check(self, switch: SwitchInfo) -> None:
        if switch.name in self.down:
            raise SwitchError(f"switch '{switch.name}' ({switch.address}): not answering",
                              reachable=False)

    def read(self, switch: SwitchInfo) -> dict[Key, Item] | None:
        self._check(switch)
        held = self.state.get(switch.name)
        return None if held is None else dict(held)

    def probe(self, switch: SwitchInfo) -> None:
        self._check(switch)

    def push_pipeline(self, switch: SwitchInfo) -> None:
        self._check(switch)
        self.state[switch.name] = {}

    def write(self, switch: SwitchInfo, changes: list[Change]) -> None:
        self._check(switch)
        held = self.state.get(switch.name)
        if held is None:
            raise SwitchError(f"switch '{switch.name}': no pipeline")
        for c in changes:
            present = c.item.key in held
            if (c.kind == INSERT) == present:
                what = "INSERT of an existing" if present else "MODIFY/DELETE of a missing"
                raise SwitchError(f"switch '{switch.name}': {what} key {c.item.key}")
            if c.kind == DELETE:
                del held[c.item.key]
            else:
                held[c.item.key] = c.item
            self.writes += 1

    def restart(self, name: str) -> None:
        """The switch lost its program and entries (as a restarted process does)."""
        self.state[name] = None

    def close(self) -> None:
        """Nothing to release."""
