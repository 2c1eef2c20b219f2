"""Name -> P4Info object lookups, with errors that list what exists."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from control_plane.drivers.p4runtime.values import P4RuntimeError
from control_plane.p4runtime_api.p4.config.v1 import p4info_pb2

# ---------------------------------------------------------------------------------------------
# P4Info lookups

__all__ = ["P4Info"]


class P4Info:
    """Name -> P4Info object lookup with errors that list what exists."""

    def __init__(self, info: p4info_pb2.P4Info):
        self.proto = info
        self.tables = {t.preamble.name: t for t in info.tables}
        self.actions = {a.preamble.name: a for a in info.actions}
        self.counters = {c.preamble.name: c for c in info.counters}
        self.direct_counters = {c.preamble.name: c for c in info.direct_counters}
        self.registers = {r.preamble.name: r for r in info.registers}

    @classmethod
    def load(cls, p4info: str | Path | P4Info) -> P4Info:
        """A P4Info from a text-format file, or the given one."""
        return p4info if isinstance(p4info, P4Info) else cls.from_file(p4info)

    @classmethod
    def from_file(cls, path: str | Path) -> P4Info:
        """Read a P4Info in text format (p4c's ``--p4runtime-files X.txt``), or binary when
        the name ends in ``.pb``/``.bin`` (the Tofino build's: its architecture externs are
        `Any` messages of types only the SDE knows, which text format cannot parse)."""
        info = p4info_pb2.P4Info()
        binary = Path(path).suffix in (".pb", ".bin")
        try:
            if binary:
                info.ParseFromString(Path(path).read_bytes())
            else:
                text_format.Merge(Path(path).read_text(), info)
        except (OSError, text_format.ParseError, DecodeError) as exc:
            kind = "binary" if binary else "text-format"
            raise P4RuntimeError(f"P4Info {path}: cannot read as {kind} P4Info: {exc}"
                                 ) from exc
        return cls(info)

    @staticmethod
    def _get(kind: str, table: Mapping, name: str):
        try:
            return table[name]
        except KeyError:
            known = ", ".join(sorted(table)) or "none"
            raise P4RuntimeError(f"unknown {kind} '{name}' (P4Info has: {known})") from None

    def table(self, name: str) -> p4info_pb2.Table:
        return self._get("table", self.tables, name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self._get("action", self.actions, name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._get("counter", self.counters, name)

    def register(self, name: str) -> p4info_pb2.Register:
        return self._get("register", self.registers, name)

    def register_bitwidth(self, register: p4info_pb2.Register) -> int:
        spec = register.type_spec.bitstring
        kind = spec.WhichOneof("type_spec")
        if kind not in ("bit", "int"):
            raise P4RuntimeError(f"register '{register.preamble.name}': only bit<W>/int<W> cells "
                                 f"are supported, not {kind or register.type_spec}")
        return getattr(spec, kind).bitwidth

    @staticmethod
    def _member(owner: str, kind: str, members: Mapping, name: str):
        if name not in members:
            raise P4RuntimeError(f"{owner} has no {kind} '{name}' "
                                 f"({kind}s: {', '.join(members) or 'none'})")
        return members[name]

    def match_field(self, table: p4info_pb2.Table, name: str) -> p4info_pb2.MatchField:
        return self._member(f"table '{table.preamble.name}'", "match field",
                            {f.name: f for f in table.match_fields}, name)

    def action_param(self, action: p4info_pb2.Action, name: str) -> p4info_pb2.Action.Param:
        return self._member(f"action '{action.preamble.name}'", "parameter",
                            {p.name: p for p in action.params}, name)

    def table_allows_action(self, table: p4info_pb2.Table, action: p4info_pb2.Action,
                            default: bool = False) -> None:
        """Entries may not use DEFAULT_ONLY actions, the default action not TABLE_ONLY ones."""
        refs = {r.id: r for r in table.action_refs}
        ref = refs.get(action.preamble.id)
        barred = p4info_pb2.ActionRef.TABLE_ONLY if default else p4info_pb2.ActionRef.DEFAULT_ONLY
        if ref is None or ref.scope == barred:
            allowed = [
                a.preamble.name for a in self.proto.actions
                if a.preamble.id in refs and refs[a.preamble.id].scope != barred
            ]
            what = "the default action" if default else "entries"
            raise P4RuntimeError(
                f"table '{table.preamble.name}': {what} cannot use action "
                f"'{action.preamble.name}' (allowed: {', '.join(allowed)})"
            )
