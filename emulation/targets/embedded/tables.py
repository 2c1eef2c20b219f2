"""Match-action tables: their entries and the lookup structures generated code reads.

Entries are keyed in canonical form: exact -> value, lpm -> (value, prefix_len),
ternary/optional -> (value, mask), range -> (low, high).  Priorities use P4Runtime's meaning
(a larger number wins); p4c's const entries (bmv2: smaller wins) are converted when loaded,
and their values are masked as bmv2 masks them (bits outside a ternary mask or beyond an lpm
prefix are ignored).

Lookup (``lookup_kind``): "exact" tables are one dict keyed by the field value (one key field)
or the tuple of values; "lpm" tables one dict per prefix length, longest first, keyed with the
lpm field shifted right past the prefix; "ordered" tables (ternary, range, optional) a list
scanned by priority.  The pipeline's generated control code reads these structures in place,
so they are only ever mutated, never replaced.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from emulation.targets.embedded.actions import Action
from emulation.targets.embedded.expressions import parse_hexstr
from emulation.targets.embedded.json_loader import Layout, PipelineError


def no_action(S: list[Any], D: tuple[int, ...]) -> None:
    """What a miss runs in a table without a default action."""


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


class Entry:
    """One installed entry (or a table's default); counters are its direct counter.
    ``fn`` is its action's function, kept beside it so a hit costs no extra lookup."""

    __slots__ = ("match", "priority", "action", "data", "const", "packets", "bytes", "fn")

    def __init__(self, match: tuple[Any, ...], priority: int, action: Action | None,
                 data: tuple[int, ...], const: bool = False) -> None:
        self.match = match
        self.priority = priority
        self.const = const
        self.packets = 0
        self.bytes = 0
        self.set_action(action, data)

    def set_action(self, action: Action | None, data: tuple[int, ...]) -> None:
        self.action, self.data = action, data
        self.fn = action.fn if action is not None else no_action


class Table:
    """A table of one pipeline: its key, actions, entries and lookup structures."""

    def __init__(self, tj: dict[str, Any], layout: Layout, actions: dict[int, Action],
                 where: str) -> None:
        self.name: str = tj["name"]
        self.where = where
        self.source_info: dict[str, Any] | None = tj.get("source_info")  # for coverage
        if tj.get("type", "simple") != "simple":
            raise PipelineError(where, f"table type {tj.get('type')!r} (action profiles) "
                                       "is not supported")
        if tj.get("direct_meters"):
            raise PipelineError(where, "direct meters are not supported")
        self.match_type: str = tj.get("match_type", "exact")
        self.max_size = int(tj.get("max_size", 1024))
        self.with_counters = bool(tj.get("with_counters"))
        self.keys: list[KeyField] = []
        self.key_src: list[str] = []  # source of each key field's value
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
            self.key_src.append(src)
            self.keys.append(KeyField(k.get("name", ".".join(map(str, k["target"]))),
                                      mt, width))
        if sum(k.match_type == "lpm" for k in self.keys) > 1:
            raise PipelineError(where, "more than one lpm key field")
        self.lpm_index = next((i for i, k in enumerate(self.keys) if k.match_type == "lpm"), -1)
        if self.needs_priority:
            self.lookup_kind = "ordered"
        elif self.lpm_index >= 0:
            self.lookup_kind = "lpm"
        else:
            self.lookup_kind = "exact"
        self.actions: dict[str, Action] = {}
        by_id = {a.id: a for a in actions.values()}
        for aid in tj.get("action_ids", []):
            if aid not in by_id:
                raise PipelineError(where, f"unknown action id {aid}")
            self.actions[by_id[aid].name] = by_id[aid]
        self.next_names: dict[str, str | None] = dict(tj.get("next_tables", {}))
        self.base_default_next = tj.get("base_default_next")
        self.entries: dict[tuple[Any, ...], Entry] = {}
        self.exact: dict[Any, Entry] = {}
        self.lpm_levels: list[tuple[int, dict[Any, Entry]]] = []  # (shift, entries)
        self.ordered: list[Entry] = []
        self.miss = Entry((), 0, None, ())  # the default action, run on a miss
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
            self.miss.set_action(act, data)
            self.default_const = bool(de.get("action_const"))
            self.initial_default = (act, data)
        for i, e in enumerate(tj.get("entries", []) or []):
            self.load_const_entry(e, by_id, f"{where} entries[{i}]")
        self.immutable = bool(tj.get("entries"))

    @property
    def default_action(self) -> Action | None:
        return self.miss.action

    @property
    def default_data(self) -> tuple[int, ...]:
        return self.miss.data

    # ---- const entries from the JSON -------------------------------------------------------
    def load_const_entry(self, e: dict[str, Any], by_id: dict[int, Action], where: str) -> None:
        match = []
        keys = e.get("match_key", [])
        if len(keys) != len(self.keys):
            raise PipelineError(where, f"{len(keys)} match keys, table key has {len(self.keys)}")
        for i, (mk, kf) in enumerate(zip(keys, self.keys, strict=True)):
            mt = mk.get("match_type")
            w = f"{where} match_key[{i}]"
            full = (1 << kf.width) - 1
            if mt in ("exact", "valid"):
                key = mk["key"]
                match.append(int(bool(key)) if isinstance(key, bool) else parse_hexstr(key, w))
            elif mt == "lpm":  # bmv2 ignores value bits beyond the prefix
                plen = int(mk["prefix_length"])
                prefix = full ^ ((1 << max(kf.width - plen, 0)) - 1)
                match.append((parse_hexstr(mk["key"], w) & prefix, plen))
            elif mt in ("ternary", "optional"):  # ... and outside the mask
                mask = parse_hexstr(mk["mask"], w) & full
                match.append((parse_hexstr(mk["key"], w) & mask, mask))
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
        entry.set_action(action, data)

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
        self.miss.set_action(action, data)

    def reset_default(self) -> None:
        if self.initial_default is not None:
            self.miss.set_action(*self.initial_default)

    # ---- lookup structures -----------------------------------------------------------------
    def exact_key(self, match: tuple[Any, ...]) -> Any:
        """Dict key of an exact-kind entry: the value itself for a one-field key."""
        return match[0] if len(match) == 1 else match

    def lpm_key(self, match: tuple[Any, ...]) -> tuple[int, Any]:
        """(shift, dict key) of an lpm-kind entry: the lpm value shifted past its prefix."""
        i = self.lpm_index
        value, plen = match[i]
        shift = self.keys[i].width - plen
        if len(match) == 1:
            return shift, value >> shift
        return shift, tuple(value >> shift if j == i else m for j, m in enumerate(match))

    def index_add(self, entry: Entry) -> None:
        if self.lookup_kind == "exact":
            self.exact[self.exact_key(entry.match)] = entry
        elif self.lookup_kind == "lpm":
            shift, key = self.lpm_key(entry.match)
            for sh, d in self.lpm_levels:
                if sh == shift:
                    d[key] = entry
                    return
            self.lpm_levels.append((shift, {key: entry}))
            self.lpm_levels.sort(key=lambda lv: lv[0])  # longest prefix (smallest shift) first
        else:
            # after any entry of equal priority: among equals the earlier insert wins
            bisect.insort_right(self.ordered, entry, key=lambda e: -e.priority)

    def index_remove(self, entry: Entry) -> None:
        if self.lookup_kind == "exact":
            del self.exact[self.exact_key(entry.match)]
        elif self.lookup_kind == "lpm":
            shift, key = self.lpm_key(entry.match)
            for i, (sh, d) in enumerate(self.lpm_levels):
                if sh == shift:
                    del d[key]
                    if not d:
                        del self.lpm_levels[i]
                    return
        else:
            self.ordered.remove(entry)

    def match_src(self, m: str) -> str:
        """Source of 'entry match ``m`` matches key values k0, k1, ...' (ordered tables)."""
        terms = []
        for i, kf in enumerate(self.keys):
            mt = kf.match_type
            if mt in ("exact", "valid"):
                terms.append(f"_k{i} == {m}[{i}]")
            elif mt == "lpm":
                terms.append(f"not (_k{i} ^ {m}[{i}][0]) >> ({kf.width} - {m}[{i}][1])")
            elif mt in ("ternary", "optional"):
                terms.append(f"_k{i} & {m}[{i}][1] == {m}[{i}][0]")
            else:
                terms.append(f"{m}[{i}][0] <= _k{i} <= {m}[{i}][1]")
        return " and ".join(terms) or "True"
