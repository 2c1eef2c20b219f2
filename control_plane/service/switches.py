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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import grpc
from p4.v1 import p4runtime_pb2

from control_plane.deploy.entries import SwitchEntries
from control_plane.deploy.pipeline import Pipeline
from control_plane.drivers.p4runtime import (
    P4Info,
    P4RuntimeClient,
    P4RuntimeError,
    build_table_entry,
    decode_value,
    multicast_group_update,
)
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
    a server that pads its bytestrings compares equal to one that sends canonical ones."""

    key: Key
    value: tuple
    entity: p4runtime_pb2.Entity = field(compare=False)


def _match_key(fm: p4runtime_pb2.FieldMatch) -> tuple:
    kind = fm.WhichOneof("field_match_type")
    m = getattr(fm, kind)
    if kind == "lpm":
        return (fm.field_id, kind, decode_value(m.value), m.prefix_len)
    if kind in ("exact", "optional"):
        return (fm.field_id, kind, decode_value(m.value))
    return (fm.field_id, kind, m.SerializeToString(deterministic=True))


def table_item(te: p4runtime_pb2.TableEntry) -> Item:
    entity = p4runtime_pb2.Entity()
    clean = entity.table_entry
    clean.table_id, clean.priority = te.table_id, te.priority
    clean.match.extend(te.match)
    clean.action.CopyFrom(te.action)
    act = te.action.action
    value = (act.action_id, tuple(sorted((p.param_id, decode_value(p.value))
                                         for p in act.params)))
    return Item(("table", te.table_id, tuple(sorted(_match_key(fm) for fm in te.match)),
                 te.priority), value, entity)


def group_item(group_id: int, replicas: Iterable[tuple[int, int]]) -> Item:
    replicas = sorted(replicas)
    return Item(("group", group_id), tuple(replicas),
                multicast_group_update(group_id, replicas).entity)


def desired_items(info: P4Info, parts: Iterable[SwitchEntries]) -> dict[Key, Item]:
    """What a switch should hold: the entries and groups of every part, by key."""
    out: dict[Key, Item] = {}
    for part in parts:
        for group in part.groups:
            item = group_item(group.group_id, group.replicas)
            out[item.key] = item
        for entry in part.entries:
            te = build_table_entry(info, entry.table, dict(entry.match), entry.action,
                                   dict(entry.params))
            item = table_item(te)
            out[item.key] = item
    return out


@dataclass
class Change:
    kind: int  # INSERT, MODIFY or DELETE
    item: Item

    def update(self) -> p4runtime_pb2.Update:
        update = p4runtime_pb2.Update(type=self.kind)
        update.entity.CopyFrom(self.item.entity)
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
    after a read-back: the switch may have restarted since).  Returns what was done and the
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
    failure."""

    def __init__(self, pipeline: Pipeline, election_id: tuple[int, int] = (0, 1),
                 timeout: float = 5.0) -> None:
        self.pipeline = pipeline
        self.info = P4Info.load(pipeline.p4info)
        self.owned = {self.info.table(t).preamble.id for t in OWNED_TABLES}
        self.election_id = election_id
        self.timeout = timeout
        self.clients: dict[str, P4RuntimeClient] = {}

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
            raise SwitchError(f"switch '{switch.name}' ({switch.address}): {exc}",
                              reachable=False) from None
        client.use_p4info(self.info)
        self.clients[switch.name] = client
        return client

    def _drop(self, name: str) -> None:
        client = self.clients.pop(name, None)
        if client is not None:
            client.close()

    def _fail(self, switch: SwitchInfo, what: str, exc: P4RuntimeError) -> SwitchError:
        self._drop(switch.name)
        gone = exc.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        return SwitchError(f"switch '{switch.name}' ({switch.address}): {what}: {exc}",
                           reachable=not gone)

    def read(self, switch: SwitchInfo) -> dict[Key, Item] | None:
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
                item = group_item(g.multicast_group_id,
                                  [(r.egress_port, r.instance) for r in g.replicas])
            out[item.key] = item
        return out

    def push_pipeline(self, switch: SwitchInfo) -> None:
        client = self._client(switch)
        try:
            client.set_pipeline(self.info, self.pipeline.config)
        except P4RuntimeError as exc:
            raise self._fail(switch, "pipeline push", exc) from None

    def write(self, switch: SwitchInfo, changes: list[Change]) -> None:
        if not changes:
            return
        client = self._client(switch)
        for i in range(0, len(changes), BATCH):
            batch = changes[i:i + BATCH]
            try:
                client.write([c.update() for c in batch], f"write of {len(batch)} updates")
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
