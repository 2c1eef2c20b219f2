"""Compile bmv2 actions (lists of primitive calls) into Python functions ``fn(S, D)``.

``S`` is the packet state list, ``D`` the tuple of action data of the matched entry.  Every
primitive p4c emits for v1model that we support becomes a few lines of straight-line code;
``_jump``/``_jump_if_zero`` (p4c's if-statements inside actions) become a small block machine.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from emulation.targets.embedded import headers
from emulation.targets.embedded import json_loader as jl
from emulation.targets.embedded.calculations import Calculation, compile_calculation
from emulation.targets.embedded.coverage import recorder
from emulation.targets.embedded.expressions import Expr, ExprCompiler, Namespace, assign_code
from emulation.targets.embedded.externs import CounterArray, RegisterArray, ValueSet
from emulation.targets.embedded.json_loader import Layout, PipelineError
from emulation.targets.embedded.optimize import optimize

log = logging.getLogger("inart.embedded")

DROP_PORT = 511


class AssertionFailed(RuntimeError):
    """An assert/assume primitive failed; the packet is dropped and counted."""


@dataclass
class Resources:
    """Named objects primitives refer to, built once per pipeline."""

    registers: dict[str, RegisterArray] = field(default_factory=dict)
    counters: dict[str, CounterArray] = field(default_factory=dict)
    calculations: dict[str, Calculation] = field(default_factory=dict)
    field_lists: dict[int, list[int]] = field(default_factory=dict)
    value_sets: dict[str, ValueSet] = field(default_factory=dict)


@dataclass
class Action:
    """A compiled action with what P4Runtime needs to know about it.

    ``fn(S, D)`` returns True when the action executed ``exit``; ``body`` is its source
    (parameters in ``D``) when it is straight-line code a control can inline.
    """

    name: str
    id: int
    param_names: list[str]
    param_widths: list[int]
    fn: Callable[[list[Any], tuple[int, ...]], bool | None]
    exits: bool = False
    body: list[str] | None = None


def build_resources(doc: dict[str, Any], layout: Layout, ns: Namespace) -> Resources:
    """Instantiate registers, counters, calculations and field lists of the program."""
    res = Resources()
    for r in doc.get("register_arrays", []):
        res.registers[r["name"]] = RegisterArray(r["name"], int(r["size"]), int(r["bitwidth"]))
    for c in doc.get("counter_arrays", []):
        res.counters[c["name"]] = CounterArray(c["name"], int(c.get("size", 0)),
                                               bool(c.get("is_direct")), c.get("binding"))
    for i, c in enumerate(doc.get("calculations", [])):
        res.calculations[c["name"]] = compile_calculation(
            layout, ns, c, f"calculations[{i}] {c.get('name')!r}")
    for vs in doc.get("parse_vsets", []) or []:
        res.value_sets[vs["name"]] = ValueSet(vs["name"], 0)  # its size comes with the P4Info
    for i, fl in enumerate(doc.get("field_lists", [])):
        slots = []
        for el in fl.get("elements", []):
            if el.get("type") != "field":
                raise PipelineError(f"field_lists[{i}]", "only field elements are supported")
            slots.append(layout.field_slot(el["value"], f"field_lists[{i}]")[0])
        res.field_lists[int(fl["id"])] = slots
    return res


class PrimitiveCompiler:
    """Turns primitive calls into source lines for one program."""

    def __init__(self, layout: Layout, ns: Namespace, res: Resources) -> None:
        self.layout = layout
        self.ns = ns
        self.res = res
        self.ex = ExprCompiler(layout, ns)
        self.std = layout.headers.get("standard_metadata")
        self.cov = recorder()  # statement coverage, when $INART_P4_COVERAGE asks for it

    def mark(self, source_info: dict[str, Any] | None, kind: str, ind: str) -> list[str]:
        """The coverage mark of one statement (nothing when coverage is off)."""
        return [] if self.cov is None else self.cov.mark(self.ns, source_info, kind, ind)

    def value(self, tv: Any, where: str, lw: list[int] | None) -> Expr:
        return self.ex.compile(tv, where, lw)

    def lvalue(self, tv: Any, where: str, lw: list[int] | None = None
               ) -> tuple[int | str, int, bool]:
        slot, width, signed = self.ex.lvalue(tv, where, lw)
        if width is None:
            raise PipelineError(where, "a varbit field is assigned only with assign_VL")
        return slot, width, signed

    def named(self, tv: Any, kind: str, table: dict[str, Any], where: str) -> Any:
        if not isinstance(tv, dict) or tv.get("type") != kind or tv.get("value") not in table:
            raise PipelineError(where, f"expected a known {kind}, got {tv!r}")
        return table[tv["value"]]

    def std_slot(self, fname: str, where: str) -> int:
        if self.std is None or self.std.htype.offset(fname) is None:
            raise PipelineError(where, f"standard_metadata.{fname} is required by v1model")
        return self.std.slots[fname]

    def compile(self, prim: dict[str, Any], where: str, lw: list[int] | None,
                ind: str) -> list[str]:
        """Source lines (with indentation ``ind``) for one primitive call."""
        op = prim.get("op")
        p = prim.get("parameters", [])
        where = f"{where} op {op!r}"

        def v(i: int) -> Expr:
            if i >= len(p):
                raise PipelineError(where, f"missing parameter {i}")
            return self.value(p[i], f"{where} parameter {i}", lw)

        if op in ("assign", "modify_field"):
            slot, width, signed = self.lvalue(p[0], where, lw)
            return [ind + assign_code(slot, width, signed, v(1))]
        if op == "assign_VL":
            dst, src = self.varbit(p[0], where), self.varbit(p[1], where)
            return [ind + f"S[{dst[0]}] = S[{src[0]}]", ind + f"S[{dst[1]}] = S[{src[1]}]"]
        if op in ("assign_header", "copy_header"):
            dst, src = self.ex.header(p[0], where, lw), self.ex.header(p[1], where, lw)
            if dst.htype.name != src.htype.name:
                raise PipelineError(where, "assign_header between different header types")
            return headers.assign_header(dst, src, ind)
        if op == "assign_union":
            dst_u, src_u = self.ex.union(p[0], where, lw), self.ex.union(p[1], where, lw)
            lines = []
            for k in range(len(dst_u.info.members)):
                lines += headers.assign_header(dst_u.member(k), src_u.member(k), ind)
            return lines
        if op in ("assign_header_stack", "assign_union_stack"):
            return headers.assign_stack(self.ex.stack(p[0], where), self.ex.stack(p[1], where),
                                        ind, where)
        if op in ("push", "pop"):
            st = self.ex.stack(p[0], where)
            return headers.shift_stack(st, v(1).src, op == "push", ind)
        if op == "add_header":
            return headers.set_valid(self.ex.header(p[0], where, lw), ind, reset=True)
        if op == "add_header_fast":
            return headers.set_valid(self.ex.header(p[0], where, lw), ind, reset=False)
        if op == "remove_header":
            return [ind + f"S[{self.ex.header(p[0], where, lw).base}] = False"]
        if op in ("mark_to_drop", "drop"):
            lines = [ind + f"S[{self.std_slot('egress_spec', where)}] = {DROP_PORT}"]
            if self.std is not None and self.std.htype.offset("mcast_grp") is not None:
                lines.append(ind + f"S[{self.std.slots['mcast_grp']}] = 0")
            return lines
        if op == "register_read":
            slot, width, signed = self.lvalue(p[0], where, lw)
            reg = self.named(p[1], "register_array", self.res.registers, where)
            r = self.ns.bind("reg", reg.values)
            return self.indexed(v(2), reg.size, ind, lambda i: [assign_code(
                slot, width, signed, Expr(f"{r}[{i}]", "data", reg.bitwidth))])
        if op == "register_write":
            reg = self.named(p[0], "register_array", self.res.registers, where)
            r = self.ns.bind("reg", reg.values)
            value = v(2)
            fits = value.width is not None and value.width <= reg.bitwidth
            src = value.src if fits else f"{value.src} & {reg.mask}"
            return self.indexed(v(1), reg.size, ind, lambda i: [f"{r}[{i}] = {src}"])
        if op == "count":
            ctr = self.named(p[0], "counter_array", self.res.counters, where)
            cp, cb = self.ns.bind("cpk", ctr.packets), self.ns.bind("cby", ctr.bytes)
            return self.indexed(v(1), ctr.size, ind, lambda i: [
                f"{cp}[{i}] += 1", f"{cb}[{i}] += S[{jl.INGRESS_LEN}]"])
        if op == "modify_field_with_hash_based_offset":
            slot, width, signed = self.lvalue(p[0], where, lw)
            calc = self.named(p[2], "calculation", self.res.calculations, where)
            c = self.ns.bind("calc", calc.fn)
            return [ind + f"sz = {v(3).src} or 1",
                    ind + assign_code(slot, width, signed,
                                      Expr(f"({c}(S) % sz + {v(1).src})", "data"))]
        if op == "modify_field_rng_uniform":
            slot, width, signed = self.lvalue(p[0], where, lw)
            rnd = self.ns.bind("randint", random.randint)
            lo, hi = v(1).src, v(2).src
            return [ind + f"if {lo} <= {hi}:",
                    ind + "    " + assign_code(slot, width, signed,
                                               Expr(f"{rnd}({lo}, {hi})", "data"))]
        if op in ("clone_ingress_pkt_to_egress", "clone_egress_pkt_to_egress"):
            return [ind + f"S[{jl.CLONE_SID}] = {v(0).src}",
                    ind + f"S[{jl.CLONE_FL}] = {v(1).src if len(p) > 1 else 0}"]
        if op in ("resubmit", "resubmit_preserving_field_list"):
            return [ind + f"S[{jl.RESUBMIT_FL}] = {v(0).src} + 1"]
        if op in ("recirculate", "recirculate_preserving_field_list"):
            return [ind + f"S[{jl.RECIRC_FL}] = {v(0).src} + 1"]
        if op == "truncate":
            return [ind + f"S[{jl.TRUNCATE}] = {v(0).src}"]
        if op == "exit":
            return [ind + "return True"]
        if op == "no_op":
            return [ind + "pass"]
        if op == "log_msg":
            fmt = p[0].get("value", "") if p else ""
            args = p[1].get("value", []) if len(p) > 1 else []
            srcs = [self.value(a, where, lw).src for a in args]
            lg = self.ns.bind("log", log.debug)
            return [ind + f"{lg}('log_msg: ' + {fmt!r}.replace('{{}}', '%s'), "
                    + "".join(f"{s}, " for s in srcs) + ")"]
        if op in ("assert", "assume"):
            exc = self.ns.bind("AssertionFailed", AssertionFailed)
            return [ind + f"if not {v(0).src}: raise {exc}({where!r})"]
        raise PipelineError(where, f"primitive {op!r} is not supported")

    @staticmethod
    def indexed(index: Expr, size: int, ind: str, body: Callable[[str], list[str]]
                ) -> list[str]:
        """``body`` on array cell ``index`` if it is inside the array (else nothing, as bmv2
        built with NDEBUG skips it); a constant index is checked here, once."""
        if index.src.isdigit():
            return [ind + ln for ln in body(index.src)] if int(index.src) < size else []
        return ([ind + f"i = {index.src}", ind + f"if i < {size}:"]
                + [ind + "    " + ln for ln in body("i")])

    def varbit(self, tv: Any, where: str) -> tuple[int | str, int | str]:
        """(value slot, length slot) of a varbit field reference."""
        if not isinstance(tv, dict) or tv.get("type") != "field":
            raise PipelineError(where, f"expected a varbit field, got {tv!r}")
        hdr, fname = self.layout.resolve(tv["value"], where)
        j = hdr.htype.offset(fname)
        if j is None or j != hdr.htype.vl_index:
            raise PipelineError(where, f"{hdr.name}.{fname} is not a varbit field")
        vl = hdr.vl_slot
        assert vl is not None
        return hdr.valid_slot + 1 + j, vl


def compile_body(pc: PrimitiveCompiler, prims: list[dict[str, Any]], where: str,
                 lw: list[int] | None, ind: str) -> list[str]:
    """Lines for a primitive list, turning _jump/_jump_if_zero into a block machine."""
    jumps = {i for i, pr in enumerate(prims) if pr.get("op") in ("_jump", "_jump_if_zero")}
    if not jumps:
        lines: list[str] = []
        for i, pr in enumerate(prims):
            lines += pc.mark(pr.get("source_info"), "primitive", ind)
            lines += pc.compile(pr, f"{where} primitives[{i}]", lw, ind)
        return lines or [ind + "pass"]
    leaders = {0, len(prims)}
    for i in jumps:
        target = int(pc.ex.const_width(prims[i]["parameters"][-1], f"{where}[{i}]"))
        leaders |= {target, i + 1}
    order = sorted(leaders)
    lines = [ind + "pc = 0", ind + "while True:"]
    for b, start in enumerate(order[:-1]):
        end = order[b + 1]
        lines.append(ind + f"    if pc == {start}:")
        body = ind + "        "
        for i in range(start, end):
            pr = prims[i]
            w = f"{where} primitives[{i}]"
            if pr.get("op") == "_jump":
                target = pc.ex.const_width(pr["parameters"][0], w)
                lines.append(body + f"pc = {target}; continue")
            elif pr.get("op") == "_jump_if_zero":
                cond = pc.value(pr["parameters"][0], w, lw)
                target = pc.ex.const_width(pr["parameters"][1], w)
                lines.append(body + f"if not ({cond.src}): pc = {target}; continue")
            else:
                lines += pc.mark(pr.get("source_info"), "primitive", body)
                lines += pc.compile(pr, w, lw, body)
        lines.append(body + f"pc = {end}; continue")
    lines.append(ind + "    return")
    return lines


def compile_actions(doc: dict[str, Any], pc: PrimitiveCompiler) -> dict[int, Action]:
    """Compile every action of the program, keyed by its JSON id."""
    out: dict[int, Action] = {}
    for i, a in enumerate(doc["actions"]):
        where = f"actions[{i}] {a.get('name')!r}"
        rd = a.get("runtime_data", [])
        widths = [int(r["bitwidth"]) for r in rd]
        prims = a.get("primitives", [])
        lines = compile_body(pc, prims, where, widths, "    ")
        fn = exec_function("\n".join(["def action(S, D):", *lines]), pc.ns, "action", where)
        straight = not any(pr.get("op") in ("_jump", "_jump_if_zero") for pr in prims)
        out[int(a["id"])] = Action(a["name"], int(a["id"]), [r["name"] for r in rd], widths, fn,
                                   exits=any(pr.get("op") == "exit" for pr in prims),
                                   body=[ln[4:] for ln in lines] if straight else None)
    return out


def compile_source(source: str, where: str) -> Any:
    """Optimize and compile generated source (optimize.py); a SyntaxError is a bug in our
    generator, reported with its location."""
    try:
        return compile(optimize(source), f"<embedded {where}>", "exec")
    except SyntaxError as exc:
        raise PipelineError(where, f"internal code generation error: {exc}") from exc


def exec_function(source: str, ns: Namespace, name: str, where: str) -> Any:
    """Compile generated source in the pipeline's namespace and return function ``name``."""
    local: dict[str, Any] = {}
    exec(compile_source(source, where), ns.values, local)  # noqa: S102 - from validated JSON
    return local[name]
