"""Names -> ids and widths from bfrt.json (the program's, from bf-p4c, and the device's fixed
tables, which bf_switchd returns as ``non_p4_config``).

The deploy layer names tables, fields and actions as the P4Info does (``InaIngress.route_dst``,
``dst_addr``, ``InaIngress.set_next_hop``); bfrt.json prefixes P4 tables with the pipeline
(``pipe.InaIngress.route_dst``).  Fixed tables (``$PORT``, ``$pre.node``, ...) keep their names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


class BfrtInfoError(ValueError):
    """A name or value bfrt.json does not have; the message names the table and field."""


SCALAR_WIDTHS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
                 "int8": 8, "int16": 16, "int32": 32, "int64": 64}


@dataclass(frozen=True)
class Field:
    """A key or data field: its id, match type (keys), value type and whether it is a list.

    bf_switchd's fixed tables mark list fields as ``"repeated": true`` on a scalar type
    (``$pre.node`` ``$DEV_PORT``: a list of uint32); those travel as ``int_arr_val`` /
    ``bool_arr_val`` / ``str_arr_val``, scalars as ``stream`` / ``bool_val`` / ``str_val``."""

    id: int
    name: str
    kind: str  # bytes, uint8 .. uint64, int8 .. int64, string, bool, float, container
    width: int = 0  # bits, for bytes/integer fields (of each element when repeated)
    match: str = ""  # Exact, LPM, Ternary, Range (keys only)
    repeated: bool = False
    choices: tuple[str, ...] = ()  # the values a string field accepts (empty: any)

    @property
    def nbytes(self) -> int:
        return (self.width + 7) // 8


@dataclass(frozen=True)
class Table:
    """One bfrt.json table with its keys, actions (name -> (id, params)) and table data."""

    name: str
    id: int
    keys: dict[str, Field]
    actions: dict[str, tuple[int, dict[str, Field]]] = field(default_factory=dict)
    data: dict[str, Field] = field(default_factory=dict)

    def key(self, name: str) -> Field:
        if name not in self.keys:
            raise BfrtInfoError(f"table {self.name}: no key field '{name}' (has "
                                f"{', '.join(self.keys)})")
        return self.keys[name]

    def action(self, name: str) -> tuple[int, dict[str, Field]]:
        if name not in self.actions:
            raise BfrtInfoError(f"table {self.name}: no action '{name}' (has "
                                f"{', '.join(self.actions)})")
        return self.actions[name]

    def datum(self, name: str) -> Field:
        if name not in self.data:
            raise BfrtInfoError(f"table {self.name}: no data field '{name}' (has "
                                f"{', '.join(self.data)})")
        return self.data[name]


def _field(raw: dict, where: str) -> Field:
    inner = raw.get("singleton", raw)  # table-level data wraps the field in 'singleton'
    try:
        typ = inner.get("type", {"type": "container"})  # container fields: no scalar type
        kind = typ.get("type", "bytes")
        width = int(typ.get("width", SCALAR_WIDTHS.get(kind, 0)))
        repeated = inner.get("repeated", False)
        if not isinstance(repeated, bool):
            raise ValueError(f"'repeated' is {repeated!r}, expected true or false")
        return Field(int(inner["id"]), str(inner["name"]), kind, width,
                     str(raw.get("match_type", "")), repeated,
                     tuple(str(c) for c in typ.get("choices", ())))
    except (KeyError, TypeError, ValueError) as exc:
        raise BfrtInfoError(f"{where}: malformed field {raw!r}: {exc}") from None


def _table(raw: dict) -> Table:
    where = f"bfrt.json table {raw.get('name')!r}"
    try:
        keys = {k["name"]: _field(k, where) for k in raw.get("key", [])}
        actions = {a["name"]: (int(a["id"]), {d["name"]: _field(d, where)
                                              for d in a.get("data", [])})
                   for a in raw.get("action_specs", [])}
        data = {}
        for d in raw.get("data", []):
            f = _field(d, where)
            data[f.name] = f
        return Table(str(raw["name"]), int(raw["id"]), keys, actions, data)
    except (KeyError, TypeError) as exc:
        raise BfrtInfoError(f"{where}: malformed: missing {exc}") from None


class BfrtInfo:
    """Tables of one or more bfrt.json documents, by name."""

    def __init__(self, *docs: dict) -> None:
        self.tables: dict[str, Table] = {}
        for doc in docs:
            if not isinstance(doc, dict) or not isinstance(doc.get("tables"), list):
                raise BfrtInfoError("not a bfrt.json document: no 'tables' list")
            for raw in doc["tables"]:
                t = _table(raw)
                self.tables[t.name] = t

    @classmethod
    def from_bytes(cls, *blobs: bytes) -> BfrtInfo:
        try:
            return cls(*(json.loads(b) for b in blobs if b))
        except json.JSONDecodeError as exc:
            raise BfrtInfoError(f"bfrt.json is not JSON: {exc}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> BfrtInfo:
        return cls.from_bytes(Path(path).read_bytes())

    def table(self, name: str) -> Table:
        """A table by its bfrt.json name, or by its P4Info name (``pipe.`` prefixed)."""
        for candidate in (name, f"pipe.{name}"):
            if candidate in self.tables:
                return self.tables[candidate]
        matches = [t for n, t in self.tables.items() if n.endswith("." + name)]
        if len(matches) == 1:
            return matches[0]
        raise BfrtInfoError(f"no table '{name}' in bfrt.json" + (
            f" (ambiguous: {', '.join(t.name for t in matches)})" if matches else ""))

    def by_id(self, table_id: int) -> Table | None:
        return next((t for t in self.tables.values() if t.id == table_id), None)

    def describe(self, te) -> str:
        """``table(key=value, ...)`` of a TableEntry message by this document's names, for
        error messages and reports (ids it does not know are shown as numbers)."""
        t = self.by_id(te.table_id)
        if t is None:
            return f"table id {te.table_id}"
        by_id = {f.id: f for f in t.keys.values()}
        parts = []
        for kf in te.key.fields:
            f = by_id.get(kf.field_id)
            parts.append(f"{f.name if f else kf.field_id}={_key_text(kf, f)}")
        return f"{t.name}({', '.join(parts)})"


def _key_text(kf, f: Field | None) -> str:
    """One key field's value: text for string keys, hex for P4 fields (byte strings:
    addresses), decimal for the fixed tables' integers (ports, ids), with ``/prefix`` for
    LPM and ``&&&mask`` for ternary matches."""
    kind = kf.WhichOneof("match_type")
    part = getattr(kf, kind) if kind else None
    raw = getattr(part, "value", b"") if part is not None else b""
    if f is not None and f.kind == "string":
        text = raw.decode(errors="replace")
    elif f is None or f.kind == "bytes":
        text = f"0x{raw.hex()}"
    else:
        text = str(int.from_bytes(raw, "big"))
    if kind == "lpm":
        text += f"/{part.prefix_len}"
    elif kind == "ternary":
        text += f"&&&0x{part.mask.hex()}"
    return text
