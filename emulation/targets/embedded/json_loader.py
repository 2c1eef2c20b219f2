"""Load a bmv2 JSON document (p4c's v1model output) and lay its fields out in a flat slot list.

WHY a flat list: every packet's state (all header fields, validity bits and a few intrinsic
registers) lives in ONE Python list copied from a template, so generated code reads and writes
``S[17]`` instead of walking dictionaries or attribute chains per packet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SUPPORTED_MAJOR = 2

# Fixed intrinsic slots at the head of every packet state list.
EXIT = 0  # `exit` statement executed in the current control
CLONE_SID = 1  # clone session id requested (0: none)
CLONE_FL = 2  # field list id of the clone
RESUBMIT_FL = 3  # resubmit requested: field list id + 1 (0: none)
RECIRC_FL = 4  # recirculate requested: field list id + 1 (0: none)
TRUNCATE = 5  # truncate length in bytes (0: none)
INGRESS_LEN = 6  # frame length at ingress (bytes counted by counters, as bmv2 does)
N_INTRINSIC = 7


class PipelineError(ValueError):
    """A JSON construct we cannot execute; the message names it and where it is."""

    def __init__(self, location: str, message: str) -> None:
        super().__init__(f"{location}: {message}")
        self.location = location


@dataclass
class HeaderInfo:
    """One header instance: where its validity bit and fields live in the slot list."""

    name: str
    type_name: str
    metadata: bool
    valid_slot: int
    first_slot: int
    field_names: list[str]
    widths: list[int]
    signed: list[bool]
    slots: dict[str, int] = field(default_factory=dict)

    @property
    def nbits(self) -> int:
        return sum(self.widths)


@dataclass
class Layout:
    """Slot assignment for every field of a program, plus the initial packet state."""

    headers: dict[str, HeaderInfo]
    nslots: int
    template: list[Any]
    aliases: dict[str, tuple[str, str]]
    errors: dict[str, int]

    def field_slot(self, ref: list[str] | tuple[str, str], where: str) -> tuple[int, int, bool]:
        """Return (slot, width, signed) of a ``[header, field]`` reference."""
        if not isinstance(ref, (list, tuple)) or len(ref) != 2:
            raise PipelineError(where, f"field reference {ref!r}: expected [header, field]")
        hname, fname = ref
        hdr = self.headers.get(hname)
        if hdr is None:
            alias = self.aliases.get(f"{hname}.{fname}")
            if alias is None:
                raise PipelineError(where, f"unknown header instance {hname!r}")
            hname, fname = alias
            hdr = self.headers[hname]
        if fname == "$valid$":
            return hdr.valid_slot, 1, False
        if fname not in hdr.slots:
            raise PipelineError(where, f"header {hname!r} has no field {fname!r}")
        i = hdr.field_names.index(fname)
        return hdr.slots[fname], hdr.widths[i], hdr.signed[i]

    def header(self, name: str, where: str) -> HeaderInfo:
        hdr = self.headers.get(name)
        if hdr is None:
            raise PipelineError(where, f"unknown header instance {name!r}")
        return hdr


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


def build_layout(doc: dict[str, Any]) -> Layout:
    """Assign slots: intrinsic slots first, then per header its validity bit and fields."""
    reject_nonempty(doc, ("header_stacks", "header_unions", "header_union_stacks",
                          "meter_arrays", "parse_vsets"))
    types: dict[str, dict[str, Any]] = {}
    for i, ht in enumerate(doc["header_types"]):
        types[ht["name"]] = ht
        for f in ht.get("fields", []):
            if f[1] == "*":
                raise PipelineError(f"header_types[{i}] {ht['name']!r}",
                                    f"variable-length field {f[0]!r} is not supported")
    headers: dict[str, HeaderInfo] = {}
    template: list[Any] = [False, 0, 0, 0, 0, 0, 0]
    for i, h in enumerate(doc["headers"]):
        where = f"headers[{i}] {h.get('name')!r}"
        ht = types.get(h.get("header_type"))
        if ht is None:
            raise PipelineError(where, f"unknown header_type {h.get('header_type')!r}")
        fields = ht["fields"]
        valid_slot = len(template)
        metadata = bool(h.get("metadata"))
        template.append(metadata)  # metadata is always valid
        first = len(template)
        info = HeaderInfo(
            name=h["name"], type_name=ht["name"], metadata=metadata, valid_slot=valid_slot,
            first_slot=first, field_names=[f[0] for f in fields],
            widths=[int(f[1]) for f in fields],
            signed=[bool(f[2]) if len(f) > 2 else False for f in fields],
        )
        for j, f in enumerate(fields):
            info.slots[f[0]] = first + j
            template.append(0)
        if not metadata and info.nbits % 8:
            raise PipelineError(where, f"header is {info.nbits} bits, not a whole number of bytes")
        headers[h["name"]] = info
    aliases = {a[0]: (a[1][0], a[1][1]) for a in doc.get("field_aliases", [])}
    errors = {e[0]: int(e[1]) for e in doc.get("errors", [])}
    return Layout(headers, len(template), template, aliases, errors)
