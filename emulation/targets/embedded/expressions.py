"""Translate bmv2 JSON expressions into Python source, compiled once per pipeline load.

WHY source code rather than a tree of closures: one action of the INA program adds 32 register
values; as generated straight-line Python it costs one function call per action instead of
several calls per expression node, which is what makes thousands of packets per second possible
in one interpreter.  Values follow bmv2: arithmetic on unbounded integers, truncation only when a
value is stored into a field or register (``assign_code``).

Headers, unions and stacks are values too (``Expr.ref``): a header is known by the slot of its
validity bit, an int, or the source of an expression when it is a stack element picked at run
time (``hdr.s[i]``, ``hdr.s.last``); such an index is bounds-checked where it is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from emulation.targets.embedded.json_loader import (
    HeaderInfo,
    HeaderType,
    Layout,
    PipelineError,
    StackInfo,
    UnionInfo,
)


class StackIndexError(IndexError):
    """A header stack index outside the stack (bmv2 aborts; we drop the packet)."""


def stack_index(i: int, size: int) -> int:
    """``i`` if it indexes a stack of ``size`` elements; raises otherwise."""
    if 0 <= i < size:
        return i
    raise StackIndexError(f"header stack index {i} outside 0..{size - 1}")


def slot_add(base: int | str, k: int) -> int | str:
    """``base + k`` folded when ``base`` is a constant slot."""
    if isinstance(base, int):
        return base + k
    return f"({base} + {k})" if k else base


@dataclass(frozen=True)
class HRef:
    """A header instance as generated code sees it: its slots, maybe computed at run time."""

    htype: HeaderType
    base: int | str  # validity slot
    name: str
    metadata: bool = False
    peers: tuple[int | str, ...] = ()  # validity slots of the other members of its union

    @staticmethod
    def of(h: HeaderInfo) -> HRef:
        return HRef(h.htype, h.valid_slot, h.name, h.metadata, tuple(h.union_peers))

    @property
    def first(self) -> int | str:
        """Slot of field 0."""
        return slot_add(self.base, 1)

    def slot(self, j: int) -> int | str:
        return slot_add(self.base, 1 + j)


@dataclass(frozen=True)
class URef:
    """A header union: its members, maybe an element of a union stack picked at run time."""

    info: UnionInfo
    base: int | str  # validity slot of the first member

    def member(self, k: int) -> HRef:
        """Member ``k``, its union peers relative to the same base."""
        members = self.info.members
        origin = members[0].valid_slot
        offs = [m.valid_slot - origin for m in members]
        return HRef(members[k].htype, slot_add(self.base, offs[k]),
                    f"{self.info.name}.{self.info.member_names[k]}",
                    peers=tuple(slot_add(self.base, o) for i, o in enumerate(offs) if i != k))


def element_base(st: StackInfo, index_src: str, ns: Namespace) -> str:
    """Source of the first slot of element ``index_src`` of a stack (bounds-checked)."""
    check = ns.bind("stack_index", stack_index)
    return f"({st.base} + {check}({index_src}, {st.size}) * {st.stride})"


def stack_element(st: StackInfo, index: int | str, ns: Namespace, where: str) -> HRef | URef:
    """Element ``index`` (a constant or the source of an expression) of a stack."""
    if isinstance(index, int):
        if not 0 <= index < st.size:
            raise PipelineError(where, f"index {index} outside stack {st.name!r}")
        if st.is_union_stack:
            u = st.unions[index]
            return URef(u, u.base)
        return HRef.of(st.headers[index])
    base = element_base(st, index, ns)
    if st.is_union_stack:
        return URef(st.unions[0], base)
    h = st.headers[0]
    return HRef(h.htype, base, f"{st.name}[]", h.metadata)


@dataclass(frozen=True)
class Expr:
    """Python source of one value; ``width`` bounds it as unsigned when known (else None)."""

    src: str
    kind: str  # "data" | "bool" | "header" | "union" | "stack"
    width: int | None = None
    swidth: int | None = None  # value known to fit a signed field of this width
    ref: Any = field(default=None, compare=False)  # HRef | URef | StackInfo

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
    if isinstance(value, bool):
        return int(value)
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
        self.ids: dict[int, str] = {}

    def bind(self, prefix: str, obj: Any) -> str:
        """Make ``obj`` reachable from generated code; return the name to use."""
        known = self.ids.get(id(obj))
        if known is not None and self.values[known] is obj:
            return known
        name = f"{prefix}_{len(self.values)}"
        self.values[name] = obj
        self.ids[id(obj)] = name
        return name


class ExprCompiler:
    """Compile type-value JSON objects into ``Expr`` for one program layout."""

    def __init__(self, layout: Layout, ns: Namespace) -> None:
        self.layout = layout
        self.ns = ns
        self.temps = 0

    def header(self, tv: Any, where: str, lw: list[int] | None = None) -> HRef:
        """A header operand: by name, or an expression producing one (stack element)."""
        e = self.compile(tv, where, lw)
        if e.kind != "header":
            raise PipelineError(where, f"expected a header, got {tv!r}")
        return e.ref

    def union(self, tv: Any, where: str, lw: list[int] | None = None) -> URef:
        e = self.compile(tv, where, lw)
        if e.kind != "union":
            raise PipelineError(where, f"expected a header union, got {tv!r}")
        return e.ref

    def stack(self, tv: Any, where: str) -> StackInfo:
        if not isinstance(tv, dict) or tv.get("type") not in ("header_stack",
                                                             "header_union_stack"):
            raise PipelineError(where, f"expected a header stack, got {tv!r}")
        return self.layout.stack(tv.get("value"), where)

    def last_base(self, st: StackInfo) -> str:
        """First slot of the last extracted element of a stack (``.last``)."""
        return element_base(st, f"S[{st.next_slot}] - 1", self.ns)

    def field_ref(self, href: HRef, fname: str, where: str) -> tuple[int | str, int | None,
                                                                     bool]:
        """(slot, width or None for varbit, signed) of a field of a header reference."""
        if fname == "$valid$":
            return href.base, 1, False
        j = href.htype.offset(fname)
        if j is None:
            raise PipelineError(where, f"header {href.name!r} has no field {fname!r}")
        return href.slot(j), href.htype.widths[j], href.htype.signed[j]

    def field_value(self, slot: int | str, width: int | None, signed: bool) -> Expr:
        if signed:
            return Expr(f"S[{slot}]", "data", None, swidth=width)
        return Expr(f"S[{slot}]", "data", width)

    def lvalue(self, tv: Any, where: str, lw: list[int] | None = None
               ) -> tuple[int | str, int | None, bool]:
        """(slot, width, signed) of an assignable field: a field, a ``stack_field`` or an
        ``access_field`` expression (a field of a stack element chosen at run time)."""
        if isinstance(tv, dict) and tv.get("type") == "field":
            hdr, fname = self.layout.resolve(tv.get("value"), where)
            return self.field_ref(HRef.of(hdr), fname, where)
        if isinstance(tv, dict) and tv.get("type") == "stack_field":
            sname, fname = tv["value"]
            st = self.layout.stack(sname, where)
            h = st.headers[0] if st.headers else None
            if h is None:
                raise PipelineError(where, "stack_field of a union stack")
            return self.field_ref(HRef(h.htype, self.last_base(st), sname), fname, where)
        if isinstance(tv, dict) and tv.get("type") == "expression":
            v = tv.get("value")
            while isinstance(v, dict) and v.get("type") == "expression":  # p4c wraps twice
                v = v.get("value")
            if isinstance(v, dict) and v.get("op") == "access_field":
                href = self.header(v.get("left"), where, lw)
                j = int(v.get("right"))
                if not 0 <= j < href.htype.nfields:
                    raise PipelineError(where, f"field offset {j} outside {href.name!r}")
                return href.slot(j), href.htype.widths[j], href.htype.signed[j]
        raise PipelineError(where, f"assignment target {tv!r}: only fields are supported")

    def compile(self, tv: Any, where: str, local_widths: list[int] | None = None) -> Expr:
        """Compile a type-value object; ``local_widths`` gives action parameter widths."""
        if not isinstance(tv, dict) or "type" not in tv:
            raise PipelineError(where, f"expected a type/value object, got {tv!r}")
        t, v = tv["type"], tv.get("value")
        if t in ("field", "stack_field"):
            return self.field_value(*self.lvalue(tv, where, local_widths))
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
            href = HRef.of(self.layout.header(v, where))
            return Expr(f"S[{href.base}]", "header", ref=href)
        if t == "header_union":
            u = self.layout.union(v, where)
            return Expr(self.union_valid(URef(u, u.base)), "union", ref=URef(u, u.base))
        if t in ("header_stack", "header_union_stack"):
            return Expr("None", "stack", ref=self.stack(tv, where))
        if t == "expression":
            return self.compile_op(v, where, local_widths)
        raise PipelineError(where, f"expression operand type {t!r} is not supported")

    def union_valid(self, u: URef) -> str:
        """Source of 'some member of the union is valid'."""
        return "(" + " or ".join(f"S[{u.member(k).base}]"
                                 for k in range(len(u.info.members))) + ")"

    def header_equal(self, a: HRef, b: HRef) -> str:
        """bmv2's header ==: same type, both valid, equal fields (varbit lengths too)."""
        if a.htype.name != b.htype.name:
            return "False"
        n = a.htype.span - 1
        return (f"(S[{a.base}] and S[{b.base}] and S[{a.first}:{slot_add(a.first, n)}] == "
                f"S[{b.first}:{slot_add(b.first, n)}])")

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
            if op == "&" and (a.width is not None or b.width is not None):
                # a non-negative operand of known width bounds the result, whatever the other
                width = min(w for w in (a.width, b.width) if w is not None)
            elif a.width is not None and b.width is not None:
                if op in ("|", "^"):
                    width = max(a.width, b.width)
                elif op == "+":
                    width = max(a.width, b.width) + 1
                elif op == ">>":
                    width = a.width
            return Expr(f"({a.src} {BINARY[op]} {b.src})", "data", width)
        if op in COMPARE:
            a, b = sub(left), sub(right)
            if op in ("==", "!=") and a.kind in ("header", "union"):
                if a.kind != b.kind:
                    raise PipelineError(where, f"{op} between a {a.kind} and a {b.kind}")
                eq = self.header_equal(a.ref, b.ref) if a.kind == "header" \
                    else self.union_equal(a.ref, b.ref)
                return Expr(eq if op == "==" else f"(not {eq})", "bool")
            return Expr(f"({a.src} {COMPARE[op]} {b.src})", "bool")
        if op in ("and", "or"):
            a, b = sub(left), sub(right)
            return Expr(f"({a.src} {op} {b.src})", "bool")
        if op == "not":
            return Expr(f"(not {sub(right).src})", "bool")
        if op == "~":
            return Expr(f"(~{sub(right).src})", "data")
        if op in ("valid", "valid_union"):
            h = sub(right)
            if h.kind not in ("header", "union"):
                raise PipelineError(where, f"'{op}' expects a header or union operand")
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
        if op in ("dereference_header_stack", "dereference_union_stack"):
            st = self.stack(left, where)
            idx = sub(right)
            index: int | str = int(idx.src) if idx.src.lstrip("-").isdigit() else idx.src
            ref = stack_element(st, index, self.ns, where)
            if isinstance(ref, URef):
                return Expr(self.union_valid(ref), "union", ref=ref)
            return Expr(f"S[{ref.base}]", "header", ref=ref)
        if op == "access_field":
            slot, width, signed = self.lvalue({"type": "expression", "value": e}, where, lw)
            return self.field_value(slot, width, signed)
        if op == "access_union_header":
            u = self.union(left, where, lw)
            k = int(right)
            if not 0 <= k < len(u.info.members):
                raise PipelineError(where, f"member offset {k} outside union {u.info.name!r}")
            ref = u.member(k)
            return Expr(f"S[{ref.base}]", "header", ref=ref)
        if op in ("last_stack_index", "size_stack"):
            st = self.stack(right, where)
            minus = " - 1" if op == "last_stack_index" else ""
            return Expr(f"(S[{st.next_slot}]{minus})", "data", 32)
        raise PipelineError(where, f"expression operator {op!r} is not supported")

    def union_equal(self, a: URef, b: URef) -> str:
        """bmv2's union ==: both valid with the same member valid and equal."""
        if a.info.member_names != b.info.member_names:
            return "False"
        terms = [self.header_equal(a.member(k), b.member(k))
                 for k in range(len(a.info.members))]
        return "(" + " or ".join(terms) + ")"

    def clamp(self, src: str, lo: int, hi: int) -> str:
        """Inline saturation (no min/max calls: this runs 32 times per INA packet)."""
        self.temps += 1
        t = f"_t{self.temps}"
        return f"({lo} if ({t} := {src}) < {lo} else {hi} if {t} > {hi} else {t})"

    def const_width(self, tv: Any, where: str) -> int:
        if isinstance(tv, dict) and tv.get("type") == "hexstr":
            return parse_hexstr(tv["value"], where)
        raise PipelineError(where, "width operand of a cast must be a constant hexstr")


def assign_code(slot: int | str, width: int | None, signed: bool, value: Expr) -> str:
    """Source that stores ``value`` into a field slot, truncating as bmv2 does."""
    if value.kind == "bool":
        return f"S[{slot}] = 1 if {value.src} else 0"
    if width is None:
        raise ValueError("assign_code needs a fixed width")
    if signed:
        fits = value.fits_signed()
        if fits is not None and fits <= width:
            return f"S[{slot}] = {value.src}"
        half = 1 << (width - 1)
        return f"S[{slot}] = (({value.src} + {half}) & {(1 << width) - 1}) - {half}"
    if value.width is not None and value.width <= width:
        return f"S[{slot}] = {value.src}"
    return f"S[{slot}] = {value.src} & {(1 << width) - 1}"
