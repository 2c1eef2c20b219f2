"""Compile the bmv2 parser (states, extract, set, lookahead, verify, select) into one function.

The generated ``parse(S, buf) -> (offset, error)`` inlines every state reached from only one
place into its predecessor, so a typical parser is straight-line code; states entered from
several places (or in a loop, e.g. header stacks) are dispatched by an integer program
counter.  As in simple_switch, a parser error stops parsing and the packet still enters
ingress with ``standard_metadata.parser_error`` set; the header being extracted stays invalid.

Parse value sets: a transition taken when the key (each field padded to whole bytes) is one
of the set's members, which P4Runtime writes.  Header stacks: extract to a stack fills its
next element and fails with StackOutOfBounds when
it is full; ``last`` fields (``stack_field``) read the last extracted element.  Varbit fields:
``extract_VL`` takes the field's length in bits from an expression (ParserInvalidArgument
unless a multiple of 8, HeaderTooShort beyond the header's maximum length).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from emulation.targets.embedded.actions import PrimitiveCompiler, exec_function
from emulation.targets.embedded.codec import extract_lines, vl_extract_lines
from emulation.targets.embedded.expressions import (
    Expr,
    HRef,
    URef,
    assign_code,
    element_base,
    parse_hexstr,
)
from emulation.targets.embedded.headers import mark_valid
from emulation.targets.embedded.json_loader import PipelineError

# core.p4's errors with bmv2's numbers, for JSON documents that omit them
CORE_ERRORS = {"NoError": 0, "PacketTooShort": 1, "NoMatch": 2, "StackOutOfBounds": 3,
               "HeaderTooShort": 4, "ParserTimeout": 5, "ParserInvalidArgument": 6}
MAX_NESTING = 24  # inlined states per chain before dispatching (Python's nesting limits)


def error_code(pc: PrimitiveCompiler, name: str) -> int:
    """Numeric value p4c gave a core error (bmv2 defaults when the JSON omits it)."""
    return pc.layout.errors.get(name, CORE_ERRORS[name])


def error_names(errors: dict[str, int]) -> dict[int, str]:
    """Error value -> name, the program's own errors over the core defaults (for statistics)."""
    names = {code: name for name, code in CORE_ERRORS.items()}
    names.update((code, name) for name, code in errors.items())
    return names


class ParserCompiler:
    """Generates the parse function of one bmv2 parser object."""

    def __init__(self, pc: PrimitiveCompiler, parser: dict[str, Any], where: str) -> None:
        self.pc = pc
        self.ns = pc.ns
        self.parser = parser
        self.where = where
        self.err = {name: error_code(pc, name) for name in CORE_ERRORS}
        states = parser.get("parse_states", [])
        self.states = {s["name"]: s for s in states}
        self.numbers = {s["name"]: i for i, s in enumerate(states)}
        self.entries = self.find_entries()

    def find_entries(self) -> set[str]:
        """States that need a dispatch label: the initial state, states reached from more
        than one transition, and states on a cycle."""
        init = self.parser.get("init_state")
        refs: Counter[str] = Counter()
        for st in self.states.values():
            for tr in st.get("transitions", []):
                if tr.get("next_state") is not None:
                    refs[tr["next_state"]] += 1
        entries = {init} | {name for name, n in refs.items() if n > 1}
        # a state reachable from itself through single-reference states: break the cycle
        for name in self.states:
            seen, todo = set(), [name]
            while todo:
                cur = todo.pop()
                for tr in self.states.get(cur, {}).get("transitions", []):
                    nxt = tr.get("next_state")
                    if nxt == name:
                        entries.add(name)
                    elif nxt is not None and nxt not in seen and nxt not in entries:
                        seen.add(nxt)
                        todo.append(nxt)
        return entries

    def fail(self, name: str) -> str:
        return f"return off, {self.err[name]}"

    def lookahead(self, value: Any, where: str, ind: str, lines: list[str], var: str) -> Expr:
        """Emit a bounds check and read of ``width`` bits at ``bit_offset`` from ``off``."""
        try:
            bit_off, width = int(value[0]), int(value[1])
        except (TypeError, ValueError, IndexError) as exc:
            raise PipelineError(where, f"lookahead {value!r}: expected [offset, width]") from exc
        nbytes = (bit_off + width + 7) // 8
        tail = nbytes * 8 - bit_off - width
        lines.append(ind + f"if off + {nbytes} > n: {self.fail('PacketTooShort')}")
        read = f"int.from_bytes(buf[off:off + {nbytes}], 'big')"
        lines.append(ind + f"{var} = ({read} >> {tail}) & {(1 << width) - 1}")
        return Expr(var, "data", width)

    def operand(self, tv: Any, where: str, ind: str, lines: list[str], var: str) -> Expr:
        if isinstance(tv, dict) and tv.get("type") == "lookahead":
            return self.lookahead(tv.get("value"), where, ind, lines, var)
        return self.pc.value(tv, where, None)

    def extract_target(self, param: dict[str, Any], where: str, ind: str,
                       lines: list[str]) -> tuple[HRef, str | None]:
        """The header an extract fills and the stack's next-index slot to advance."""
        kind, value = param.get("type"), param.get("value")
        if kind == "regular":
            return HRef.of(self.pc.layout.header(value, where)), None
        if kind == "stack":
            st = self.pc.layout.stack(value, where)
            if st.is_union_stack:
                raise PipelineError(where, f"extract to union stack {value!r} needs a member")
            lines.append(ind + f"if S[{st.next_slot}] >= {st.size}: "
                               f"{self.fail('StackOutOfBounds')}")
            lines.append(ind + f"b = {element_base(st, f'S[{st.next_slot}]', self.ns)}")
            h = st.headers[0]
            return HRef(h.htype, "b", value, False), str(st.next_slot)
        if kind == "union_stack":
            sname, member = value
            st = self.pc.layout.stack(sname, where)
            if not st.is_union_stack:
                raise PipelineError(where, f"{sname!r} is not a header union stack")
            lines.append(ind + f"if S[{st.next_slot}] >= {st.size}: "
                               f"{self.fail('StackOutOfBounds')}")
            lines.append(ind + f"b = {element_base(st, f'S[{st.next_slot}]', self.ns)}")
            u = URef(st.unions[0], "b")
            return u.member(st.unions[0].member_index(member, where)), str(st.next_slot)
        raise PipelineError(where, f"extract to {kind!r} is not supported")

    def extract(self, op: dict[str, Any], where: str, ind: str) -> list[str]:
        params = op.get("parameters", [])
        lines: list[str] = []
        h, next_slot = self.extract_target(params[0], where, ind, lines)
        t = h.htype
        if op["op"] == "extract_VL" or t.vl_index is not None:
            if t.vl_index is None:
                raise PipelineError(where, "extract_VL of a header without a varbit field")
            if op["op"] == "extract_VL":
                length = self.pc.value(params[1], where, None)
            elif t.length_exp is not None:
                length = self.pc.value(t.length_exp, where, None)
            else:
                raise PipelineError(where, f"header {h.name!r} has a varbit field: "
                                           "extract_VL with a length is needed")
            lines.append(ind + f"L = {length.src}")
            lines.append(ind + f"if L % 8: {self.fail('ParserInvalidArgument')}")
            nbytes = f"({t.fixed_bits} + L) // 8"
            lines.append(ind + f"if off + {nbytes} > n: {self.fail('PacketTooShort')}")
            if t.max_length:
                lines.append(ind + f"if {nbytes} > {t.max_length}: "
                                   f"{self.fail('HeaderTooShort')}")
            lines += vl_extract_lines(t, h.first, "L", ind)
            advance = nbytes
        else:
            nbytes = t.fixed_bits // 8
            lines.append(ind + f"if off + {nbytes} > n: {self.fail('PacketTooShort')}")
            lines += extract_lines(t, h.first, self.ns, ind)
            advance = str(nbytes)
        lines += mark_valid(h, ind)
        lines.append(ind + f"off += {advance}")
        if next_slot is not None:
            lines.append(ind + f"S[{next_slot}] += 1")
        return lines

    def state_lines(self, st: dict[str, Any], where: str, ind: str, depth: int) -> list[str]:
        lines: list[str] = []
        for j, op in enumerate(st.get("parser_ops", [])):
            w = f"{where} parser_ops[{j}]"
            kind, params = op.get("op"), op.get("parameters", [])
            if kind in ("extract", "extract_VL"):
                lines += self.extract(op, w, ind)
            elif kind == "set":
                slot, width, signed = self.pc.lvalue(params[0], w)
                value = self.operand(params[1], w, ind, lines, "la")
                lines.append(ind + assign_code(slot, width, signed, value))
            elif kind == "verify":
                cond = self.pc.value(params[0], w, None)
                err = self.pc.value(params[1], w, None)
                lines.append(ind + f"if not {cond.src}: return off, {err.src}")
            elif kind in ("advance", "shift"):
                amount = self.pc.value(params[0], w, None)
                if kind == "advance":
                    lines.append(ind + f"adv = {amount.src}")
                    lines.append(ind + f"if adv % 8: {self.fail('ParserInvalidArgument')}")
                    lines.append(ind + "adv //= 8")
                else:
                    lines.append(ind + f"adv = {amount.src}")
                lines.append(ind + f"if off + adv > n: {self.fail('PacketTooShort')}")
                lines.append(ind + "off += adv")
            elif kind == "primitive":
                lines += self.pc.compile(params[0], w, None, ind)
            else:
                raise PipelineError(w, f"parser op {kind!r} is not supported")
        lines += self.transition_lines(st, where, ind, depth)
        return lines

    def goto(self, name: Any, where: str, ind: str, depth: int) -> list[str]:
        """Lines that continue with state ``name``: inlined, or through the dispatcher."""
        if name is None:
            return [ind + "return off, NOERR"]
        if name not in self.states:
            raise PipelineError(where, f"unknown next_state {name!r}")
        if name not in self.entries and depth < MAX_NESTING:
            st = self.states[name]
            return self.state_lines(st, f"{self.where} state {name!r}", ind, depth + 1)
        self.dispatched.add(name)
        return [ind + f"st = {self.numbers[name]}", ind + "continue"]

    def key_part(self, tv: Any, k: int, where: str, ind: str, lines: list[str]
                 ) -> tuple[str, int]:
        """Source of one transition key field and its width."""
        if tv.get("type") == "lookahead":
            e = self.lookahead(tv.get("value"), where, ind, lines, f"k{k}")
            assert e.width is not None
            return e.src, e.width
        if tv.get("type") == "union_stack_field":
            sname, member, fname = tv["value"]
            st = self.pc.layout.stack(sname, where)
            u = URef(st.unions[0], element_base(st, f"S[{st.next_slot}] - 1", self.ns))
            h = u.member(st.unions[0].member_index(member, where))
            slot, width, _ = self.pc.ex.field_ref(h, fname, where)
        else:
            slot, width, _ = self.pc.ex.lvalue(tv, where)
        if width is None:
            raise PipelineError(where, "a varbit field in a select key is not supported")
        return f"(S[{slot}] & {(1 << width) - 1})", width

    def transition_lines(self, st: dict[str, Any], where: str, ind: str,
                         depth: int) -> list[str]:
        lines: list[str] = []
        key = st.get("transition_key", [])
        parts: list[tuple[str, int]] = []
        if key:
            parts = [self.key_part(tv, k, f"{where} transition_key[{k}]", ind, lines)
                     for k, tv in enumerate(key)]
            expr = parts[0][0]
            for src, width in parts[1:]:
                expr = f"(({expr}) << {((width + 7) // 8) * 8}) | {src}"
            lines.append(ind + f"key = {expr}")
        first = True
        for t, tr in enumerate(st.get("transitions", [])):
            w = f"{where} transitions[{t}]"
            ttype = tr.get("type", "hexstr" if tr.get("value") != "default" else "default")
            if ttype == "default" or tr.get("value") == "default":
                body = self.goto(tr.get("next_state"), w, ind + ("    " if not first else ""),
                                 depth)
                if first:
                    return lines + body
                return lines + [ind + "else:"] + body
            mask = tr.get("mask")
            if ttype == "parse_vset":
                cond = self.value_set_test(tr.get("value"), mask, parts, w)
            elif ttype != "hexstr":
                raise PipelineError(w, f"transition type {ttype!r} is not supported")
            elif mask is None:
                cond = f"key == {parse_hexstr(tr['value'], w)}"
            else:
                m = parse_hexstr(mask, w)
                cond = f"key & {m} == {parse_hexstr(tr['value'], w) & m}"
            lines.append(ind + f"{'if' if first else 'elif'} {cond}:")
            lines += self.goto(tr.get("next_state"), w, ind + "    ", depth)
            first = False
        no_match = f"return off, {self.err['NoMatch']}"
        return lines + ([ind + no_match] if first else [ind + "else:", ind + "    " + no_match])

    def value_set_test(self, name: Any, mask: Any, parts: list[tuple[str, int]], where: str
                       ) -> str:
        """Source of 'the key is in value set ``name``' (under ``mask``, as bmv2 masks both
        the key and the members); the set learns the key's field widths here."""
        vs = self.pc.res.value_sets.get(name)
        if vs is None:
            raise PipelineError(where, f"unknown parse value set {name!r}")
        widths = [w for _, w in parts]
        if vs.widths and vs.widths != widths:
            raise PipelineError(where, f"value set {name!r} used with keys of different widths")
        vs.widths = widths
        values = self.ns.bind("vset", vs.values)
        if mask is None:
            return f"key in {values}"
        m = parse_hexstr(mask, where)
        return f"any(key & {m} == v & {m} for v in {values})"

    def build(self) -> Any:
        init = self.parser.get("init_state")
        if init not in self.states:
            raise PipelineError(self.where, f"unknown init_state {init!r}")
        self.ns.values["NOERR"] = self.err["NoError"]
        self.dispatched: set[str] = set()
        body = self.state_lines(self.states[init], f"{self.where} state {init!r}", " " * 8, 0)
        blocks = [(init, body)]
        done = {init}
        while self.dispatched - done:
            name = sorted(self.dispatched - done)[0]
            done.add(name)
            blocks.append((name, self.state_lines(self.states[name],
                                                  f"{self.where} state {name!r}", " " * 12, 0)))
        src = ["def parse(S, buf):", "    n = len(buf)", "    off = 0"]
        if not self.dispatched:
            src += [ln[4:] for ln in body]
        else:
            src += [f"    st = {self.numbers[init]}", "    while True:"]
            for i, (name, lines) in enumerate(blocks):
                src.append(f"        {'if' if i == 0 else 'elif'} st == {self.numbers[name]}:")
                src += ["    " + ln for ln in lines] if i == 0 else lines
        return exec_function("\n".join(src), self.ns, "parse", self.where)


def compile_parser(pc: PrimitiveCompiler, doc: dict[str, Any]) -> Any:
    """The v1model pipeline has exactly one parser, named 'parser'."""
    parsers = doc["parsers"]
    if len(parsers) != 1:
        raise PipelineError("parsers", f"expected exactly one parser, found {len(parsers)}")
    return ParserCompiler(pc, parsers[0], f"parsers[0] {parsers[0].get('name')!r}").build()
