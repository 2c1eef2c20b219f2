"""Load a bmv2 JSON document (p4c's v1model output) and lay its fields out in a flat slot list.

WHY a flat list: every packet's state (all header fields, validity bits and a few intrinsic
registers) lives in ONE Python list copied from a template, so generated code reads and writes
``S[17]`` instead of walking dictionaries or attribute chains per packet.

Each header instance occupies a run of slots: its validity bit at ``base``, its fields at
``base + 1 ...`` and, for a header with a variable-length (varbit) field, that field's current
length in bits after them.  The elements of a header stack, and the unions of a union stack,
are laid out back to back with one stride, so an element picked by a runtime index is
``base + index * stride`` and push/pop are slice moves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SUPPORTED_MAJOR = 2

# Fixed intrinsic slots at the head of every packet state list.
CLONE_SID = 0  # clone session id requested (0: none)
CLONE_FL = 1  # field list id of the clone
RESUBMIT_FL = 2  # resubmit requested: field list id + 1 (0: none)
RECIRC_FL = 3  # recirculate requested: field list id + 1 (0: none)
TRUNCATE = 4  # truncate length in bytes (0: none)
INGRESS_LEN = 5  # frame length at ingress (bytes counted by counters, as bmv2 does)
PAYLOAD = 6  # the bytes the parser left (checksums over the payload); set only where one is
N_INTRINSIC = 7


class PipelineError(ValueError):
    """A JSON construct we cannot execute; the message names it and where it is."""

    def __init__(self, location: str, message: str) -> None:
        super().__init__(f"{location}: {message}")
        self.location = location


@dataclass
class HeaderType:
    """A header type: field names, widths (None for the varbit field) and signedness."""

    name: str
    field_names: list[str]
    widths: list[int | None]
    signed: list[bool]
    vl_index: int | None = None  # position of the varbit field
    max_length: int = 0  # bytes, for a header with a varbit field (0: unbounded)
    length_exp: Any = None  # P4-14 style length expression of the varbit field

    @property
    def nfields(self) -> int:
        return len(self.widths)

    @property
    def fixed_bits(self) -> int:
        """Width of every field but the varbit one."""
        return sum(w for w in self.widths if w is not None)

    @property
    def span(self) -> int:
        """Slots one instance takes: validity, fields, varbit length."""
        return 1 + self.nfields + (self.vl_index is not None)

    def offset(self, fname: str) -> int | None:
        try:
            return self.field_names.index(fname)
        except ValueError:
            return None


@dataclass
class HeaderInfo:
    """One header instance: where its validity bit and fields live in the slot list."""

    name: str
    htype: HeaderType
    metadata: bool
    valid_slot: int
    union_peers: list[int] = field(default_factory=list)  # other members' validity slots

    @property
    def type_name(self) -> str:
        return self.htype.name

    @property
    def first_slot(self) -> int:
        return self.valid_slot + 1

    @property
    def field_names(self) -> list[str]:
        return self.htype.field_names

    @property
    def widths(self) -> list[int | None]:
        return self.htype.widths

    @property
    def signed(self) -> list[bool]:
        return self.htype.signed

    @property
    def vl_slot(self) -> int | None:
        """Slot holding the varbit field's current length in bits."""
        t = self.htype
        return None if t.vl_index is None else self.valid_slot + 1 + t.nfields

    @property
    def slots(self) -> dict[str, int]:
        return {f: self.valid_slot + 1 + i for i, f in enumerate(self.htype.field_names)}

    @property
    def nbits(self) -> int:
        return self.htype.fixed_bits


@dataclass
class UnionInfo:
    """A header union: its member headers, in member order."""

    name: str
    members: list[HeaderInfo]
    member_names: list[str]

    @property
    def base(self) -> int:
        return self.members[0].valid_slot

    def member_index(self, name: str, where: str) -> int:
        if name not in self.member_names:
            raise PipelineError(where, f"union {self.name!r} has no member {name!r}")
        return self.member_names.index(name)


@dataclass
class StackInfo:
    """A header stack or a header-union stack: elements back to back, and its next index."""

    name: str
    size: int
    next_slot: int
    base: int  # first slot of element 0
    stride: int
    headers: list[HeaderInfo] = field(default_factory=list)  # header stacks
    unions: list[UnionInfo] = field(default_factory=list)  # union stacks

    @property
    def is_union_stack(self) -> bool:
        return bool(self.unions)


@dataclass
class Layout:
    """Slot assignment for every field of a program, plus the initial packet state."""

    headers: dict[str, HeaderInfo]
    nslots: int
    template: list[Any]
    aliases: dict[str, tuple[str, str]]
    errors: dict[str, int]
    types: dict[str, HeaderType] = field(default_factory=dict)
    stacks: dict[str, StackInfo] = field(default_factory=dict)
    unions: dict[str, UnionInfo] = field(default_factory=dict)

    def resolve(self, ref: list[str] | tuple[str, str], where: str) -> tuple[HeaderInfo, str]:
        """(header, field name) of a ``[header, field]`` reference, through aliases."""
        if not isinstance(ref, (list, tuple)) or len(ref) != 2:
            raise PipelineError(where, f"field reference {ref!r}: expected [header, field]")
        hname, fname = ref
        hdr = self.headers.get(hname)
        if hdr is None:
            alias = self.aliases.get(f"{hname}.{fname}")
            if alias is None:
                raise PipelineError(where, f"unknown header instance {hname!r}")
            hname, fname = alias
            hdr = self.header(hname, where)
        return hdr, fname

    def field_slot(self, ref: list[str] | tuple[str, str], where: str) -> tuple[int, int, bool]:
        """Return (slot, width, signed) of a ``[header, field]`` reference (not varbit)."""
        hdr, fname = self.resolve(ref, where)
        if fname == "$valid$":
            return hdr.valid_slot, 1, False
        i = hdr.htype.offset(fname)
        if i is None:
            raise PipelineError(where, f"header {hdr.name!r} has no field {fname!r}")
        width = hdr.widths[i]
        if width is None:
            raise PipelineError(where, f"varbit field {hdr.name}.{fname} used where a "
                                       "fixed-width value is needed")
        return hdr.valid_slot + 1 + i, width, hdr.signed[i]

    def header(self, name: str, where: str) -> HeaderInfo:
        hdr = self.headers.get(name)
        if hdr is None:
            raise PipelineError(where, f"unknown header instance {name!r}")
        return hdr

    def stack(self, name: Any, where: str) -> StackInfo:
        st = self.stacks.get(name)
        if st is None:
            raise PipelineError(where, f"unknown header stack {name!r}")
        return st

    def union(self, name: Any, where: str) -> UnionInfo:
        u = self.unions.get(name)
        if u is None:
            raise PipelineError(where, f"unknown header union {name!r}")
        return u


def parse_json_bytes(data: bytes | str) -> dict[str, Any]:
    """Decode a bmv2 JSON document, raising PipelineError on bad JSON or version."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PipelineError("bmv2 JSON", f"not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise PipelineError("bmv2 JSON", "top level must be an object")
    version = doc.get("__meta__", {}).get("version")
    if not (isinstance(version, list) and len(version) == 2 and version[0] == SUPPORTED_MAJOR):
        raise PipelineError("__meta__.version", f"{version!r}: expected [2, minor]")
    for key in ("header_types", "headers", "parsers", "deparsers", "actions", "pipelines"):
        if not isinstance(doc.get(key), list):
            raise PipelineError(key, "missing or not a list")
    return doc


def reject_nonempty(doc: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Refuse constructs we do not execute, naming the first one found."""
    for key in keys:
        items = doc.get(key) or []
        if items:
            first = items[0]
            name = first.get("name", "?") if isinstance(first, dict) else first
            raise PipelineError(f"{key}[0] {name!r}", f"'{key}' is not supported")


def header_type(ht: dict[str, Any], where: str) -> HeaderType:
    names, widths, signed = [], [], []
    vl_index = None
    for j, f in enumerate(ht.get("fields", [])):
        names.append(f[0])
        signed.append(bool(f[2]) if len(f) > 2 else False)
        if f[1] == "*":
            if vl_index is not None:
                raise PipelineError(where, "more than one variable-length field")
            vl_index = j
            widths.append(None)
        else:
            widths.append(int(f[1]))
    return HeaderType(ht["name"], names, widths, signed, vl_index,
                      int(ht.get("max_length") or 0), ht.get("length_exp"))


def build_layout(doc: dict[str, Any]) -> Layout:
    """Assign slots: intrinsic slots first, then per header its validity bit and fields,
    stack elements and union-stack elements back to back."""
    reject_nonempty(doc, ("meter_arrays",))
    types: dict[str, HeaderType] = {}
    for i, ht in enumerate(doc["header_types"]):
        types[ht["name"]] = header_type(ht, f"header_types[{i}] {ht.get('name')!r}")
    by_id: dict[int, dict[str, Any]] = {}
    for i, h in enumerate(doc["headers"]):
        if h.get("header_type") not in types:
            raise PipelineError(f"headers[{i}] {h.get('name')!r}",
                                f"unknown header_type {h.get('header_type')!r}")
        by_id[int(h["id"])] = h
    unions_json = {int(u["id"]): u for u in doc.get("header_unions") or []}

    headers: dict[str, HeaderInfo] = {}
    template: list[Any] = [0] * N_INTRINSIC
    template[PAYLOAD] = b""

    def place(h: dict[str, Any]) -> HeaderInfo:
        if h["name"] in headers:
            raise PipelineError(f"header {h['name']!r}", "belongs to two stacks or unions")
        htype = types[h["header_type"]]
        metadata = bool(h.get("metadata"))
        where = f"header {h['name']!r}"
        if not metadata and htype.fixed_bits % 8:
            raise PipelineError(where, f"header is {htype.fixed_bits} bits, not a whole "
                                       "number of bytes")
        info = HeaderInfo(h["name"], htype, metadata, len(template))
        template.append(metadata)  # metadata is always valid
        template.extend([0] * htype.nfields)
        if htype.vl_index is not None:
            template.append(0)
        headers[h["name"]] = info
        return info

    def member(hid: Any, where: str) -> dict[str, Any]:
        h = by_id.get(int(hid))
        if h is None:
            raise PipelineError(where, f"unknown header id {hid}")
        return h

    unions: dict[str, UnionInfo] = {}
    union_types = {ut["name"]: ut for ut in doc.get("header_union_types") or []}

    def place_union(u: dict[str, Any], where: str) -> UnionInfo:
        ut = union_types.get(u.get("union_type"))
        if ut is None:
            raise PipelineError(where, f"unknown union_type {u.get('union_type')!r}")
        members = [place(member(hid, where)) for hid in u.get("header_ids", [])]
        names = [m[0] for m in ut.get("headers", [])]
        if len(names) != len(members):
            raise PipelineError(where, "header_ids do not match the union type's members")
        for m in members:
            m.union_peers = [o.valid_slot for o in members if o is not m]
        info = UnionInfo(u["name"], members, names)
        unions[u["name"]] = info
        return info

    stacks: dict[str, StackInfo] = {}
    for i, s in enumerate(doc.get("header_stacks") or []):
        where = f"header_stacks[{i}] {s.get('name')!r}"
        base = len(template)
        elems = [place(member(hid, where)) for hid in s.get("header_ids", [])]
        if not elems:
            raise PipelineError(where, "a header stack needs at least one element")
        if len({e.type_name for e in elems}) != 1:
            raise PipelineError(where, "elements of different header types")
        template.append(0)
        stacks[s["name"]] = StackInfo(s["name"], len(elems), len(template) - 1, base,
                                      elems[0].htype.span, headers=elems)
    for i, s in enumerate(doc.get("header_union_stacks") or []):
        where = f"header_union_stacks[{i}] {s.get('name')!r}"
        base = len(template)
        elems_u = []
        for uid in s.get("header_union_ids", []):
            u = unions_json.get(int(uid))
            if u is None:
                raise PipelineError(where, f"unknown header union id {uid}")
            elems_u.append(place_union(u, where))
        if not elems_u or len({u.members[0].type_name for u in elems_u}) != 1:
            raise PipelineError(where, "elements must be unions of one type")
        template.append(0)
        stride = sum(m.htype.span for m in elems_u[0].members)
        stacks[s["name"]] = StackInfo(s["name"], len(elems_u), len(template) - 1, base, stride,
                                      unions=elems_u)
    for i, u in enumerate(doc.get("header_unions") or []):
        if u["name"] not in unions:
            place_union(u, f"header_unions[{i}] {u.get('name')!r}")
    for h in doc["headers"]:
        if h["name"] not in headers:
            place(h)
    aliases = {a[0]: (a[1][0], a[1][1]) for a in doc.get("field_aliases", [])}
    errors = {e[0]: int(e[1]) for e in doc.get("errors", [])}
    return Layout(headers, len(template), template, aliases, errors, types, stacks, unions)
