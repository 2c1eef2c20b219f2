"""Match-action tables: exact (hash), lpm (one hash per prefix length), ternary/range (priority
ordered scan), with default and const entries and direct counters.

Entries are keyed in canonical form: exact -> value, lpm -> (value, prefix_len),
ternary/optional -> (value, mask), range -> (low, high).  Priorities use P4Runtime's meaning
(a larger number wins); p4c's const entries (bmv2: smaller wins) are converted when loaded.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emulation.targets.embedded import json_loader as jl
from emulation.targets.embedded.actions import Action, exec_function
from emulation.targets.embedded.expressions import Namespace, parse_hexstr
from emulation.targets.embedded.json_loader import Layout, PipelineError


class EntryError(Exception):
    """A rejected table operation; ``code`` is a gRPC status code name (P4Runtime spec)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class KeyField:
    name: str
    match_type: str  # exact | lpm | ternary | range | valid | optional
    width: int


@dataclass(eq=False)
class Entry:
    """One installed entry; counters are the direct counter of the entry."""

    match: tuple[Any, ...]
    priority: int
    action: Action
    data: tuple[int, ...]
    const: bool = False
    packets: int = 0
    bytes: int = 0


class Table:
    """A table of one pipeline; ``run(S)`` applies it and returns the next control node."""

    def __init__(self, tj: dict[str, Any], layout: Layout, ns: Namespace,
                 actions: dict[int, Action], where: str) -> None:
        self.name: str = tj["name"]
        self.where = where
        if tj.get("type", "simple") != "simple":
            raise PipelineError(where, f"table type {tj.get('type')!r} (action profiles) "
                                       "is not supported")
        if tj.get("direct_meters"):
            raise PipelineError(where, "direct meters are not supported")
        self.match_type: str = tj.get("match_type", "exact")
        self.max_size = int(tj.get("max_size", 1024))
        self.with_counters = bool(tj.get("with_counters"))
        self.keys: list[KeyField] = []
        key_src: list[str] = []
        for i, k in enumerate(tj.get("key", [])):
            w = f"{where} key[{i}]"
            mt = k.get("match_type")
            if mt not in ("exact", "lpm", "ternary", "range", "valid", "optional"):
                raise PipelineError(w, f"match type {mt!r} is not supported")
            if mt == "valid":
                hdr = layout.header(k["target"], w)
                src, width = f"(1 if S[{hdr.valid_slot}] else 0)", 1
            else:
                slot, width, signed = layout.field_slot(k["target"], w)
                src = f"S[{slot}]" if not signed else f"(S[{slot}] & {(1 << width) - 1})"
            if k.get("mask"):
                src = f"({src} & {parse_hexstr(k['mask'], w)})"
            key_src.append(src)
            self.keys.append(KeyField(k.get("name", ".".join(map(str, k["target"]))),
                                      mt, width))
        if sum(k.match_type == "lpm" for k in self.keys) > 1:
            raise PipelineError(where, "more than one lpm key field")
        self.lpm_index = next((i for i, k in enumerate(self.keys) if k.match_type == "lpm"), -1)
        self.keyfn: Callable[[list[Any]], tuple[int, ...]] = exec_function(
            f"def key(S):\n    return ({''.join(s + ', ' for s in key_src)})", ns, "key", where)
        self.actions: dict[str, Action] = {}
        by_id = {a.id: a for a in actions.values()}
        for aid in tj.get("action_ids", []):
            if aid not in by_id:
                raise PipelineError(where, f"unknown action id {aid}")
            self.actions[by_id[aid].name] = by_id[aid]
        self.next_names: dict[str, str | None] = dict(tj.get("next_tables", {}))
        self.base_default_next = tj.get("base_default_next")
        self.next_nodes: dict[str, Any] = {}
        self.entries: dict[tuple[Any, ...], Entry] = {}
        self.exact: dict[tuple[int, ...], Entry] = {}
        self.lpm_levels: list[tuple[int, dict[tuple[int, ...], Entry]]] = []
        self.ordered: list[Entry] = []
        self.default_action: Action | None = None
        self.default_data: tuple[int, ...] = ()
        self.default_const = False
        self.initial_default: tuple[Action, tuple[int, ...]] | None = None
        self.immutable = False
        de = tj.get("default_entry")
        if de is not None:
            act = by_id.get(de.get("action_id"))
            if act is None:
                raise PipelineError(where, f"default_entry action_id {de.get('action_id')} "
                                           "unknown")
            data = tuple(parse_hexstr(x, where) for x in de.get("action_data", []))
            self.default_action, self.default_data = act, data
            self.default_const = bool(de.get("action_const"))
            self.initial_default = (act, data)
        for i, e in enumerate(tj.get("entries", []) or []):
            self.load_const_entry(e, by_id, f"{where} entries[{i}]")
        self.immutable = bool(tj.get("entries"))

    # ---- const entries from the JSON -------------------------------------------------------
    def load_const_entry(self, e: dict[str, Any], by_id: dict[int, Action], where: str) -> None:
        match = []
        keys = e.get("match_key", [])
        if len(keys) != len(self.keys):
            raise PipelineError(where, f"{len(keys)} match keys, table key has {len(self.keys)}")
        for i, mk in enumerate(keys):
            mt = mk.get("match_type")
            w = f"{where} match_key[{i}]"
            if mt in ("exact", "valid"):
                key = mk["key"]
                match.append(int(bool(key)) if isinstance(key, bool) else parse_hexstr(key, w))
            elif mt == "lpm":
                match.append((parse_hexstr(mk["key"], w), int(mk["prefix_length"])))
            elif mt in ("ternary", "optional"):
                match.append((parse_hexstr(mk["key"], w), parse_hexstr(mk["mask"], w)))
            elif mt == "range":
                match.append((parse_hexstr(mk["start"], w), parse_hexstr(mk["end"], w)))
            else:
                raise PipelineError(w, f"match type {mt!r} in const entry is not supported")
        ae = e.get("action_entry", {})
        act = by_id.get(ae.get("action_id"))
        if act is None:
            raise PipelineError(where, f"action_id {ae.get('action_id')} unknown")
        data = tuple(parse_hexstr(x, where) for x in ae.get("action_data", []))
        # bmv2: smaller number = higher priority; P4Runtime: larger wins.
        prio = (1 << 24) - int(e.get("priority", 0)) if self.needs_priority else 0
        try:
            self.insert(Entry(self.normalize(tuple(match)), prio, act, data, const=True))
        except EntryError as exc:
            raise PipelineError(where, str(exc)) from exc

    # ---- control-plane operations -----------------------------------------------------------
    @property
    def needs_priority(self) -> bool:
        return any(k.match_type in ("ternary", "range", "optional") for k in self.keys)

    def normalize(self, match: tuple[Any, ...]) -> tuple[Any, ...]:
        """Validate a match against the key and mask away don't-care bits."""
        if len(match) != len(self.keys):
            raise EntryError("INVALID_ARGUMENT", f"table {self.name!r}: {len(match)} match "
                                                 f"fields given, key has {len(self.keys)}")
        out = []
        for m, kf in zip(match, self.keys, strict=True):
            full = (1 << kf.width) - 1
            if kf.match_type in ("exact", "valid"):
                if not isinstance(m, int) or not 0 <= m <= full:
                    raise EntryError("INVALID_ARGUMENT", f"field {kf.name!r}: value {m!r} does "
                                                         f"not fit {kf.width} bits")
                out.append(m)
            elif kf.match_type == "lpm":
                value, plen = m
                if not 0 <= plen <= kf.width or not 0 <= value <= full:
                    raise EntryError("INVALID_ARGUMENT", f"field {kf.name!r}: bad lpm "
                                                         f"{value:#x}/{plen}")
                mask = full ^ ((1 << (kf.width - plen)) - 1)
                if value & ~mask:
                    raise EntryError("INVALID_ARGUMENT", f"field {kf.name!r}: lpm value has "
                                                         "bits set beyond the prefix length")
                out.append((value, plen))
            elif kf.match_type in ("ternary", "optional"):
                value, mask = m
                if not (0 <= value <= full and 0 <= mask <= full):
                    raise EntryError("INVALID_ARGUMENT", f"field {kf.name!r}: ternary value or "
                                                         f"mask does not fit {kf.width} bits")
                if value & ~mask:
                    raise EntryError("INVALID_ARGUMENT", f"field {kf.name!r}: ternary value "
                                                         "has bits outside the mask")
                out.append((value, mask))
            else:
                lo, hi = m
                if not 0 <= lo <= hi <= full:
                    raise EntryError("INVALID_ARGUMENT", f"field {kf.name!r}: bad range "
                                                         f"[{lo}, {hi}]")
                out.append((lo, hi))
        return tuple(out)

    def check_action(self, action: Action, data: tuple[int, ...]) -> None:
        if action.name not in self.actions:
            raise EntryError("INVALID_ARGUMENT", f"action {action.name!r} is not an action of "
                                                 f"table {self.name!r}")
        if len(data) != len(action.param_widths):
            raise EntryError("INVALID_ARGUMENT", f"action {action.name!r} takes "
                                                 f"{len(action.param_widths)} parameters")
        for v, w, n in zip(data, action.param_widths, action.param_names, strict=True):
            if not 0 <= v < (1 << w):
                raise EntryError("INVALID_ARGUMENT", f"action parameter {n!r}={v} does not fit "
                                                     f"{w} bits")

    def identity(self, match: tuple[Any, ...], priority: int) -> tuple[Any, ...]:
        return (match, priority if self.needs_priority else 0)

    def insert(self, entry: Entry) -> None:
        if self.immutable:
            raise EntryError("PERMISSION_DENIED", f"table {self.name!r} has const entries")
        self.check_action(entry.action, entry.data)
        if self.needs_priority and entry.priority <= 0:
            raise EntryError("INVALID_ARGUMENT", f"table {self.name!r} needs a priority > 0")
        ident = self.identity(entry.match, entry.priority)
        if ident in self.entries:
            raise EntryError("ALREADY_EXISTS", f"table {self.name!r}: entry already exists")
        if len(self.entries) >= self.max_size:
            raise EntryError("RESOURCE_EXHAUSTED", f"table {self.name!r} is full "
                                                   f"({self.max_size} entries)")
        self.entries[ident] = entry
        self.index_add(entry)

    def find(self, match: tuple[Any, ...], priority: int) -> Entry:
        entry = self.entries.get(self.identity(match, priority))
        if entry is None:
            raise EntryError("NOT_FOUND", f"table {self.name!r}: no such entry")
        return entry

    def modify(self, match: tuple[Any, ...], priority: int, action: Action,
               data: tuple[int, ...]) -> None:
        if self.immutable:
            raise EntryError("PERMISSION_DENIED", f"table {self.name!r} has const entries")
        entry = self.find(match, priority)
        self.check_action(action, data)
        entry.action, entry.data = action, data

    def delete(self, match: tuple[Any, ...], priority: int) -> None:
        if self.immutable:
            raise EntryError("PERMISSION_DENIED", f"table {self.name!r} has const entries")
        entry = self.find(match, priority)
        del self.entries[self.identity(match, priority)]
        self.index_remove(entry)

    def set_default(self, action: Action, data: tuple[int, ...]) -> None:
        if self.default_const:
            raise EntryError("PERMISSION_DENIED", f"table {self.name!r}: default action is const")
        self.check_action(action, data)
        self.default_action, self.default_data = action, data

    def reset_default(self) -> None:
        if self.initial_default is not None:
            self.default_action, self.default_data = self.initial_default

    # ---- lookup structures -----------------------------------------------------------------
    def lpm_key(self, match: tuple[Any, ...]) -> tuple[int, tuple[int, ...]]:
        plen = match[self.lpm_index][1]
        key = tuple(m[0] if i == self.lpm_index else m for i, m in enumerate(match))
        return plen, key

    def index_add(self, entry: Entry) -> None:
        if self.match_type == "exact" or (self.match_type == "lpm" and self.lpm_index < 0):
            self.exact[entry.match] = entry
        elif self.match_type == "lpm" and not self.needs_priority:
            plen, key = self.lpm_key(entry.match)
            for length, d in self.lpm_levels:
                if length == plen:
                    d[key] = entry
                    return
            self.lpm_levels.append((plen, {key: entry}))
            self.lpm_levels.sort(key=lambda lv: -lv[0])
        else:
            # after any entry of equal priority: among equals the earlier insert wins
            bisect.insort_right(self.ordered, entry, key=lambda e: -e.priority)

    def index_remove(self, entry: Entry) -> None:
        if self.match_type == "exact" or (self.match_type == "lpm" and self.lpm_index < 0):
            del self.exact[entry.match]
        elif self.match_type == "lpm" and not self.needs_priority:
            plen, key = self.lpm_key(entry.match)
            for i, (length, d) in enumerate(self.lpm_levels):
                if length == plen:
                    del d[key]
                    if not d:
                        del self.lpm_levels[i]
                    return
        else:
            self.ordered.remove(entry)

    def lookup(self, k: tuple[int, ...]) -> Entry | None:
        """Find the matching entry for a key tuple (the slow general path)."""
        if self.match_type == "exact" or (self.match_type == "lpm" and self.lpm_index < 0):
            return self.exact.get(k)
        if self.match_type == "lpm" and not self.needs_priority:
            i = self.lpm_index
            width = self.keys[i].width
            v = k[i]
            for plen, d in self.lpm_levels:
                masked = v & (((1 << plen) - 1) << (width - plen))
                e = d.get(k[:i] + (masked,) + k[i + 1:])
                if e is not None:
                    return e
            return None
        for e in self.ordered:
            if matches(self.keys, e.match, k):
                return e
        return None

    # ---- data path -------------------------------------------------------------------------
    def link(self, nodes: dict[str, Any]) -> None:
        """Resolve next-node names once the pipeline's nodes exist, then build ``run``."""
        for key, name in self.next_names.items():
            self.next_nodes[key] = nodes.get(name) if name is not None else None
        self.run = self.make_run()

    def make_run(self) -> Callable[[list[Any]], Any]:
        """``run(S)`` applies the table to a packet and returns the next control node.

        Specialised per table so the data path does one dict lookup for exact tables and no
        attribute walks; mutable state (entries, default action) is read through ``table``.
        """
        table, keyfn, nn = self, self.keyfn, self.next_nodes
        exit_slot, len_slot = jl.EXIT, jl.INGRESS_LEN
        hitmiss = "__HIT__" in nn or "__MISS__" in nn
        hit_next, miss_next = nn.get("__HIT__"), nn.get("__MISS__")
        counters = self.with_counters

        def run_miss(S: list[Any]) -> Any:
            act = table.default_action
            if act is None:
                return miss_next
            act.fn(S, table.default_data)
            if S[exit_slot]:
                return None
            return miss_next if hitmiss else nn.get(act.name)

        if not self.keys:  # p4c's synthesized action-call tables: always the default action
            return run_miss
        exact = self.exact if self.match_type == "exact" or (
            self.match_type == "lpm" and self.lpm_index < 0) else None
        lookup = self.lookup

        def run(S: list[Any]) -> Any:
            e = exact.get(keyfn(S)) if exact is not None else lookup(keyfn(S))
            if e is None:
                return run_miss(S)
            if counters:
                e.packets += 1
                e.bytes += S[len_slot]
            act = e.action
            act.fn(S, e.data)
            if S[exit_slot]:
                return None
            return hit_next if hitmiss else nn.get(act.name)

        return run


def matches(keys: list[KeyField], match: tuple[Any, ...], k: tuple[int, ...]) -> bool:
    """Whether key tuple ``k`` matches a canonical entry match."""
    for kf, m, v in zip(keys, match, k, strict=True):
        mt = kf.match_type
        if mt in ("exact", "valid"):
            if v != m:
                return False
        elif mt == "lpm":
            plen = m[1]
            if plen and (v ^ m[0]) >> (kf.width - plen):
                return False
        elif mt in ("ternary", "optional"):
            if v & m[1] != m[0]:
                return False
        elif not m[0] <= v <= m[1]:
            return False
    return True
