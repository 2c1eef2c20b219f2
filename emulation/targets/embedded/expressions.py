"""Translate bmv2 JSON expressions into Python source, compiled once per pipeline load.

WHY source code rather than a tree of closures: one action of the INA program adds 32 register
values; as generated straight-line Python it costs one function call per action instead of
several calls per expression node, which is what makes thousands of packets per second possible
in one interpreter.  Values follow bmv2: arithmetic on unbounded integers, truncation only when a
value is stored into a field or register (``assign_code``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from emulation.targets.embedded.json_loader import Layout, PipelineError


@dataclass(frozen=True)
class Expr:
    """Python source of one value; ``width`` bounds it as unsigned when known (else None)."""

    src: str
    kind: str  # "data" | "bool" | "header"
    width: int | None = None
    header: str | None = None  # for kind == "header": instance name
    swidth: int | None = None  # value known to fit a signed field of this width

    def fits_signed(self) -> int | None:
        """Smallest signed width known to hold the value (from either bound)."""
        if self.width is not None:
            return self.width + 1 if self.swidth is None else min(self.swidth, self.width + 1)
        return self.swidth


BINARY = {"+": "+", "-": "-", "*": "*", "<<": "<<", ">>": ">>", "&": "&", "|": "|", "^": "^",
          "/": "//", "%": "%"}
COMPARE = {"==": "==", "!=": "!=", ">": ">", ">=": ">=", "<": "<", "<=": "<="}


def parse_hexstr(value: Any, where: str) -> int:
    """Decode a bmv2 hexstr (optionally negative) into an int."""
    if isinstance(value, int):
        return value
    try:
        return int(str(value), 16)
    except ValueError as exc:
        raise PipelineError(where, f"hexstr {value!r} is not hexadecimal") from exc


class Namespace:
    """Globals shared by all generated functions of one pipeline (objects bound by name)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def bind(self, prefix: str, obj: Any) -> str:
        """Make ``obj`` reachable from generated code; return the name to use."""
        name = f"{prefix}_{len(self.values)}"
        self.values[name] = obj
        return name


class ExprCompiler:
    """Compile type-value JSON objects into ``Expr`` for one program layout."""

    def __init__(self, layout: Layout, ns: Namespace) -> None:
        self.layout = layout
        self.ns = ns
        self.temps = 0

    def compile(self, tv: Any, where: str, local_widths: list[int] | None = None) -> Expr:
        """Compile a type-value object; ``local_widths`` gives action parameter widths."""
        if not isinstance(tv, dict) or "type" not in tv:
            raise PipelineError(where, f"expected a type/value object, got {tv!r}")
        t, v = tv["type"], tv.get("value")
        if t == "field":
            slot, width, signed = self.layout.field_slot(v, where)
            if signed:
                return Expr(f"S[{slot}]", "data", None, swidth=width)
            return Expr(f"S[{slot}]", "data", width)
        if t == "hexstr":
            n = parse_hexstr(v, where)
            return Expr(repr(n), "data", n.bit_length() if n >= 0 else None,
                        swidth=n.bit_length() + 1)
        if t == "bool":
            return Expr("True" if v else "False", "bool")
        if t in ("local", "runtime_data"):
            if local_widths is None or not isinstance(v, int) or not 0 <= v < len(local_widths):
                raise PipelineError(where, f"{t} index {v!r} outside the action's parameters")
            return Expr(f"D[{v}]", "data", local_widths[v])
        if t == "header":
            hdr = self.layout.header(v, where)
            return Expr(f"S[{hdr.valid_slot}]", "header", header=hdr.name)
        if t == "expression":
            return self.compile_op(v, where, local_widths)
        raise PipelineError(where, f"expression operand type {t!r} is not supported")

    def compile_op(self, e: Any, where: str, lw: list[int] | None) -> Expr:
        if not isinstance(e, dict) or "op" not in e:
            # p4c sometimes nests {"type": "expression", "value": {"type": ..., "value": ...}}
            return self.compile(e, where, lw)
        op = e["op"]
        left = e.get("left")
        right = e.get("right")

        def sub(x: Any) -> Expr:
            return self.compile(x, where, lw)

        if op in BINARY:
            a, b = sub(left), sub(right)
            width = None
            if a.width is not None and b.width is not None:
                if op in ("&",):
                    width = min(a.width, b.width)
                elif op in ("|", "^"):
                    width = max(a.width, b.width)
                elif op == "+":
                    width = max(a.width, b.width) + 1
                elif op == ">>":
                    width = a.width
            return Expr(f"({a.src} {BINARY[op]} {b.src})", "data", width)
        if op in COMPARE:
            a, b = sub(left), sub(right)
            return Expr(f"({a.src} {COMPARE[op]} {b.src})", "bool")
        if op in ("and", "or"):
            a, b = sub(left), sub(right)
            return Expr(f"({a.src} {op} {b.src})", "bool")
        if op == "not":
            return Expr(f"(not {sub(right).src})", "bool")
        if op == "~":
            return Expr(f"(~{sub(right).src})", "data")
        if op == "valid":
            h = sub(right)
            if h.kind != "header":
                raise PipelineError(where, "'valid' expects a header operand")
            return Expr(f"bool({h.src})", "bool")
        if op == "d2b":
            return Expr(f"({sub(right).src} != 0)", "bool")
        if op == "b2d":
            return Expr(f"(1 if {sub(right).src} else 0)", "data", 1)
        if op == "?":
            c, a, b = sub(e.get("cond")), sub(left), sub(right)
            width = max(a.width, b.width) if a.width is not None and b.width is not None else None
            sa, sb = a.fits_signed(), b.fits_signed()
            swidth = max(sa, sb) if sa is not None and sb is not None else None
            return Expr(f"({a.src} if {c.src} else {b.src})", a.kind, width, swidth=swidth)
        if op in ("two_comp_mod", "sat_cast", "usat_cast"):
            a, w = sub(left), self.const_width(right, where)
            if op == "usat_cast":
                return Expr(self.clamp(a.src, 0, (1 << w) - 1), "data", w)
            half = 1 << (w - 1)
            if op == "sat_cast":
                return Expr(self.clamp(a.src, -half, half - 1), "data", swidth=w)
            return Expr(f"((({a.src}) + {half}) & {(1 << w) - 1}) - {half}", "data", swidth=w)
        raise PipelineError(where, f"expression operator {op!r} is not supported")

    def clamp(self, src: str, lo: int, hi: int) -> str:
        """Inline saturation (no min/max calls: this runs 32 times per INA packet)."""
        self.temps += 1
        t = f"_t{self.temps}"
        return f"({lo} if ({t} := {src}) < {lo} else {hi} if {t} > {hi} else {t})"

    def const_width(self, tv: Any, where: str) -> int:
        if isinstance(tv, dict) and tv.get("type") == "hexstr":
            return parse_hexstr(tv["value"], where)
        raise PipelineError(where, "width operand of a cast must be a constant hexstr")


def assign_code(slot: int, width: int, signed: bool, value: Expr) -> str:
    """Source that stores ``value`` into a field slot, truncating as bmv2 does."""
    if value.kind == "bool":
        return f"S[{slot}] = 1 if {value.src} else 0"
    if signed:
        fits = value.fits_signed()
        if fits is not None and fits <= width:
            return f"S[{slot}] = {value.src}"
        half = 1 << (width - 1)
        return f"S[{slot}] = (({value.src} + {half}) & {(1 << width) - 1}) - {half}"
    if value.width is not None and value.width <= width:
        return f"S[{slot}] = {value.src}"
    return f"S[{slot}] = {value.src} & {(1 << width) - 1}"
