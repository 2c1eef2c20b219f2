"""Compile the bmv2 parser (states, extract, set, lookahead, verify, select) into one function.

The generated ``parse(S, buf) -> (offset, error)`` walks states with an integer program
counter.  As in simple_switch, a parser error stops parsing and the packet still enters ingress
with ``standard_metadata.parser_error`` set; the header being extracted stays invalid.
"""

from __future__ import annotations

from typing import Any

from emulation.targets.embedded.actions import PrimitiveCompiler, exec_function
from emulation.targets.embedded.codec import extract_lines
from emulation.targets.embedded.expressions import Expr, assign_code, parse_hexstr
from emulation.targets.embedded.json_loader import PipelineError

# core.p4's errors with bmv2's numbers, for JSON documents that omit them
CORE_ERRORS = {"NoError": 0, "PacketTooShort": 1, "NoMatch": 2, "StackOutOfBounds": 3,
               "HeaderTooShort": 4, "ParserTimeout": 5, "ParserInvalidArgument": 6}


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
        self.parser = parser
        self.where = where
        self.short = error_code(pc, "PacketTooShort")
        self.nomatch = error_code(pc, "NoMatch")
        self.states = {s["name"]: i for i, s in enumerate(parser.get("parse_states", []))}

    def lookahead(self, value: Any, where: str, ind: str, lines: list[str], var: str) -> Expr:
        """Emit a bounds check and read of ``width`` bits at ``bit_offset`` from ``off``."""
        try:
            bit_off, width = int(value[0]), int(value[1])
        except (TypeError, ValueError, IndexError) as exc:
            raise PipelineError(where, f"lookahead {value!r}: expected [offset, width]") from exc
        nbytes = (bit_off + width + 7) // 8
        tail = nbytes * 8 - bit_off - width
        lines.append(ind + f"if off + {nbytes} > n: return off, {self.short}")
        read = f"int.from_bytes(buf[off:off + {nbytes}], 'big')"
        lines.append(ind + f"{var} = ({read} >> {tail}) & {(1 << width) - 1}")
        return Expr(var, "data", width)

    def operand(self, tv: Any, where: str, ind: str, lines: list[str], var: str) -> Expr:
        if isinstance(tv, dict) and tv.get("type") == "lookahead":
            return self.lookahead(tv.get("value"), where, ind, lines, var)
        return self.pc.value(tv, where, None)

    def state_lines(self, st: dict[str, Any], where: str, ind: str) -> list[str]:
        lines: list[str] = []
        for j, op in enumerate(st.get("parser_ops", [])):
            w = f"{where} parser_ops[{j}]"
            kind, params = op.get("op"), op.get("parameters", [])
            if kind == "extract":
                if params[0].get("type") != "regular":
                    raise PipelineError(w, f"extract to {params[0].get('type')!r} "
                                           "(header stacks/unions) is not supported")
                hdr = self.pc.layout.header(params[0]["value"], w)
                nbytes = hdr.nbits // 8
                lines.append(ind + f"if off + {nbytes} > n: return off, {self.short}")
                lines += extract_lines(hdr, self.pc.ns, ind)
                lines.append(ind + f"S[{hdr.valid_slot}] = True")
                lines.append(ind + f"off += {nbytes}")
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
                nbytes = f"({amount.src}) // 8" if kind == "advance" else amount.src
                lines.append(ind + f"adv = {nbytes}")
                lines.append(ind + f"if off + adv > n: return off, {self.short}")
                lines.append(ind + "off += adv")
            elif kind == "primitive":
                lines += self.pc.compile(params[0], w, None, ind)
            else:
                raise PipelineError(w, f"parser op {kind!r} is not supported")
        lines += self.transition_lines(st, where, ind)
        return lines

    def next_state(self, name: Any, where: str) -> str:
        if name is None:
            return "return off, NOERR"
        if name not in self.states:
            raise PipelineError(where, f"unknown next_state {name!r}")
        return f"st = {self.states[name]}; continue"

    def transition_lines(self, st: dict[str, Any], where: str, ind: str) -> list[str]:
        lines: list[str] = []
        key = st.get("transition_key", [])
        if key:
            parts = []
            for k, tv in enumerate(key):
                w = f"{where} transition_key[{k}]"
                if tv.get("type") == "lookahead":
                    width = int(tv["value"][1])
                else:
                    _, width, _ = self.pc.lvalue(tv, w)
                var = f"k{k}"
                e = self.operand(tv, w, ind, lines, var)
                parts.append((f"({e.src} & {(1 << width) - 1})", ((width + 7) // 8) * 8))
            expr = parts[0][0]
            for src, bits in parts[1:]:
                expr = f"(({expr}) << {bits}) | {src}"
            lines.append(ind + f"key = {expr}")
        for t, tr in enumerate(st.get("transitions", [])):
            w = f"{where} transitions[{t}]"
            target = self.next_state(tr.get("next_state"), w)
            ttype = tr.get("type", "hexstr" if tr.get("value") != "default" else "default")
            if ttype == "default" or tr.get("value") == "default":
                lines.append(ind + target)
                return lines
            if ttype != "hexstr":
                raise PipelineError(w, f"transition type {ttype!r} is not supported")
            value = parse_hexstr(tr["value"], w)
            mask = tr.get("mask")
            if mask is None:
                lines.append(ind + f"if key == {value}: {target}")
            else:
                m = parse_hexstr(mask, w)
                lines.append(ind + f"if key & {m} == {value & m}: {target}")
        lines.append(ind + f"return off, {self.nomatch}")
        return lines

    def build(self) -> Any:
        init = self.parser.get("init_state")
        if init not in self.states:
            raise PipelineError(self.where, f"unknown init_state {init!r}")
        self.pc.ns.values["NOERR"] = error_code(self.pc, "NoError")
        src = ["def parse(S, buf):", "    n = len(buf)", "    off = 0",
               f"    st = {self.states[init]}", "    while True:"]
        for i, st in enumerate(self.parser["parse_states"]):
            src.append(f"        if st == {i}:")
            src += self.state_lines(st, f"{self.where} state {st.get('name')!r}", " " * 12)
        src.append("        return off, NOERR")
        return exec_function("\n".join(src), self.pc.ns, "parse", self.where)


def compile_parser(pc: PrimitiveCompiler, doc: dict[str, Any]) -> Any:
    """The v1model pipeline has exactly one parser, named 'parser'."""
    parsers = doc["parsers"]
    if len(parsers) != 1:
        raise PipelineError("parsers", f"expected exactly one parser, found {len(parsers)}")
    return ParserCompiler(pc, parsers[0], f"parsers[0] {parsers[0].get('name')!r}").build()
