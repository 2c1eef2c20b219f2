"""Compile a control (p4c's graph of tables and conditionals) into one Python function.

WHY one function: walking node objects costs a call and a dict lookup per node; as nested
``if``s the graph costs only its conditions and lookups.  The graph is a DAG, emitted as
structured code: where paths split (a condition, a table whose next node depends on
hit/miss or on the action that ran) the branches run up to the split's immediate
post-dominator, where they join again and code continues at the outer level.  ``exit``
returns from the control.  Nesting deeper than Python allows moves a region into a function
of its own, which returns True when ``exit`` ran.

A table is looked up in place (tables.py: one dict, one dict per prefix length, or a priority
list); the hit entry's action runs through its ``fn``; a miss runs the default entry, inlined
when it is a const default action.  What runs next follows bmv2: ``__HIT__``/``__MISS__``
when the program asks ``.hit``/``.miss``, else the next node of the action that ran (a miss
with no default action at all goes to ``base_default_next``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from emulation.targets.embedded import json_loader as jl
from emulation.targets.embedded.actions import Action, PrimitiveCompiler, compile_source
from emulation.targets.embedded.expressions import Namespace
from emulation.targets.embedded.json_loader import PipelineError
from emulation.targets.embedded.tables import Table

MAX_DEPTH = 24  # indentation levels before a node becomes its own function
_ids = itertools.count()


def exec_source(source: str, ns: Namespace, where: str) -> dict[str, Any]:
    """Run generated definitions in the pipeline's namespace and return that namespace."""
    exec(compile_source(source, where), ns.values)  # noqa: S102 - from validated JSON
    return ns.values


@dataclass
class Groups:
    """Next nodes by the action that ran; ``no_action``: a miss may run none (a table
    without a default action), going to ``base_default_next``."""

    nodes: dict[str | None, list[Action]]
    no_action: bool
    base_default_next: str | None


class ControlCompiler:
    """Generates the function of one control pipeline."""

    def __init__(self, pc: PrimitiveCompiler, pj: dict[str, Any], tables: dict[str, Table],
                 where: str) -> None:
        self.pc = pc
        self.ns = pc.ns
        self.where = where
        self.prefix = f"c{next(_ids)}"
        if pj.get("action_profiles"):
            raise PipelineError(where, "action profiles are not supported")
        if pj.get("action_calls"):
            raise PipelineError(where, "action_calls are not supported")
        self.tables = tables
        self.conds: dict[str, dict[str, Any]] = {}
        for i, cj in enumerate(pj.get("conditionals", [])):
            cj = dict(cj)
            cj["where"] = f"{where} conditionals[{i}] {cj.get('name')!r}"
            self.conds[cj["name"]] = cj
        self.init = pj.get("init_table")
        for name in [self.init, *(n for node in [*self.tables, *self.conds]
                                  for n in self.successors(node))]:
            if name is not None and name not in tables and name not in self.conds:
                raise PipelineError(where, f"unknown control node {name!r}")
        self.functions: dict[str, tuple[str | None, str | None]] = {}  # name -> region
        self.ipdom: dict[str, str | None] = {}

    # ---- the graph --------------------------------------------------------------------------
    def successors(self, name: str) -> list[str | None]:
        """Every node that may run after ``name`` (None: the end of the control)."""
        if name in self.conds:
            cj = self.conds[name]
            return [cj.get("true_next"), cj.get("false_next")]
        t = self.tables[name]
        out: list[str | None] = []
        for hit in (True, False):
            node, groups = self.next_of(t, hit)
            if groups is None:
                out.append(node)
            else:
                out += groups.nodes
                if groups.no_action:
                    out.append(groups.base_default_next)
        return out

    def post_dominators(self) -> dict[str, str | None]:
        """Immediate post-dominator of every node (None: only the end joins its paths)."""
        pdom: dict[str | None, frozenset[str | None]] = {None: frozenset([None])}
        on_path: set[str] = set()
        for root in [*self.tables, *self.conds]:
            todo: list[tuple[str, bool]] = [(root, False)]
            while todo:  # depth first, a node after all its successors (no recursion limit)
                name, done = todo.pop()
                if name in pdom:
                    continue
                succ = set(self.successors(name))
                if done:
                    on_path.discard(name)
                    pdom[name] = frozenset.intersection(*(pdom[n] for n in succ)) | {name}
                    continue
                if name in on_path:
                    raise PipelineError(self.where, f"control graph has a cycle through "
                                                    f"{name!r}")
                on_path.add(name)
                todo.append((name, True))
                todo += [(n, False) for n in succ if n is not None and n not in pdom]
        return {name: max((d for d in dom if d != name), key=lambda d: len(pdom[d]))
                for name, dom in pdom.items() if name is not None}

    # ---- emission ---------------------------------------------------------------------------
    def region(self, name: str | None, stop: str | None, ind: str, depth: int) -> list[str]:
        """Lines running the nodes from ``name`` up to (not including) ``stop``."""
        if depth > MAX_DEPTH and name != stop:
            fn = f"{self.prefix}_{len(self.functions)}"
            self.functions[fn] = (name, stop)
            return [ind + f"if {fn}(S): return True"]
        lines: list[str] = []
        while name != stop:
            assert name is not None
            join = self.ipdom[name]
            if name in self.conds:
                cj = self.conds[name]
                cond = self.pc.value(cj["expression"], cj["where"], None)
                lines += self.pc.mark(cj.get("source_info"), "condition", ind)
                lines += self.branches([(f"if {cond.src}:", cj.get("true_next")),
                                        ("else:", cj.get("false_next"))], join, ind, depth)
            else:
                lines += self.emit_table(self.tables[name], join, ind, depth)
            name = join
        return lines

    def branches(self, arms: list[tuple[str, str | None]], join: str | None, ind: str,
                 depth: int) -> list[str]:
        """An if/elif/else whose arms each run from their node up to ``join``."""
        if len({node for _, node in arms}) == 1:
            return self.region(arms[0][1], join, ind, depth)
        lines = []
        for head, node in arms:
            lines.append(ind + head)
            lines += self.region(node, join, ind + "    ", depth + 1) or [ind + "    pass"]
        return lines

    def call(self, t: Table, entry: str, ind: str) -> list[str]:
        """Run an entry's action, returning from the control if it executed ``exit``."""
        if any(a.exits for a in t.actions.values()):
            return [ind + f"if {entry}.fn(S, {entry}.data): return True"]
        return [ind + f"{entry}.fn(S, {entry}.data)"]

    def run_miss(self, t: Table, ind: str) -> list[str]:
        """Lines running the default entry: inlined when it is const straight-line code."""
        act = t.default_action
        if t.default_const and act is not None and act.body is not None:
            return ([ind + f"D = {t.default_data!r}"] if act.param_widths else []) + \
                [ind + ln for ln in act.body]
        return self.call(t, self.ns.bind("miss", t.miss), ind)

    def next_of(self, t: Table, hit: bool) -> tuple[str | None, Groups]:
        """(node, no groups) when the next node is known statically, else (None, groups):
        the nodes to dispatch to by the action that ran, and for a miss the node when no
        action ran."""
        nn = t.next_names
        if "__HIT__" in nn or "__MISS__" in nn:
            return nn.get("__HIT__" if hit else "__MISS__"), None
        if not hit and t.default_const:
            act = t.default_action
            return (nn.get(act.name) if act is not None else t.base_default_next), None
        acts = list(t.actions.values())
        if not hit and t.default_action is not None and t.default_action not in acts:
            acts.append(t.default_action)
        nodes: dict[str | None, list[Action]] = {}
        for act in acts:
            nodes.setdefault(nn.get(act.name), []).append(act)
        no_action = not hit and t.initial_default is None
        if len(nodes) <= 1 and (not no_action or t.base_default_next in nodes):
            return next(iter(nodes), t.base_default_next), None
        return None, Groups(nodes, no_action, t.base_default_next)

    def dispatch(self, groups: Groups, action: str) -> list[tuple[str, str | None]]:
        """Arms branching on the action that ran (``action``: source of it): a test, and
        the node that runs next."""
        arms = [(f"_a = {action}", None)]
        items = list(groups.nodes.items())
        for i, (node, acts) in enumerate(items):
            if i == len(items) - 1 and not groups.no_action:
                arms.append(("else:", node))
            else:
                test = " or ".join(f"_a is {self.ns.bind('act', a)}" for a in acts)
                arms.append((f"{'if' if i == 0 else 'elif'} {test}:", node))
        if groups.no_action:
            arms.append(("else:", groups.base_default_next))
        return arms

    def lookup(self, t: Table, ind: str) -> list[str]:
        """Lines leaving the matching entry in ``_e`` (None on a miss)."""
        keys = t.key_src
        if t.lookup_kind == "exact":
            key = keys[0] if len(keys) == 1 else f"({', '.join(keys)})"
            return [ind + f"_e = {self.ns.bind('exact', t.exact)}.get({key})"]
        if t.lookup_kind == "lpm":
            i = t.lpm_index
            lines = [ind + f"_k{j} = {src}" for j, src in enumerate(keys)]
            parts = [f"_k{j} >> _sh" if j == i else f"_k{j}" for j in range(len(keys))]
            key = parts[0] if len(parts) == 1 else f"({', '.join(parts)})"
            return lines + [ind + f"for _sh, _d in {self.ns.bind('lpm', t.lpm_levels)}:",
                            ind + f"    _e = _d.get({key})",
                            ind + "    if _e is not None:", ind + "        break",
                            ind + "else:", ind + "    _e = None"]
        lines = [ind + f"_k{j} = {src}" for j, src in enumerate(keys)]
        return lines + [ind + f"for _e in {self.ns.bind('ordered', t.ordered)}:",
                        ind + "    _m = _e.match",
                        ind + f"    if {t.match_src('_m')}:", ind + "        break",
                        ind + "else:", ind + "    _e = None"]

    def then(self, t: Table, hit: bool, join: str | None, ind: str, depth: int
             ) -> list[str]:
        """Lines after a hit's or a miss's action: the nodes up to the table's join."""
        node, groups = self.next_of(t, hit)
        if groups is None:
            return self.region(node, join, ind, depth)
        action = "_e.action" if hit else f"{self.ns.bind('miss', t.miss)}.action"
        (setup, _), *arms = self.dispatch(groups, action)
        return [ind + setup] + self.branches(arms, join, ind, depth)

    def emit_table(self, t: Table, join: str | None, ind: str, depth: int) -> list[str]:
        """Apply ``t`` and run what follows it up to ``join``."""
        if not t.keys:  # p4c's action-call tables: always the default entry
            return self.run_miss(t, ind) + self.then(t, False, join, ind, depth)
        body = ind + "    "
        applied = self.pc.mark(t.source_info, "table", ind)
        hit = []
        if t.with_counters:
            hit += [body + "_e.packets += 1", body + f"_e.bytes += S[{jl.INGRESS_LEN}]"]
        hit += self.call(t, "_e", body)
        miss = self.run_miss(t, body) or [body + "pass"]
        lines = applied + self.lookup(t, ind)
        if self.next_of(t, True) == self.next_of(t, False) and self.next_of(t, True)[1] is None:
            return (lines + [ind + "if _e is None:"] + miss + [ind + "else:"] + hit
                    + self.then(t, True, join, ind, depth))
        return (lines + [ind + "if _e is None:"] + miss + self.then(t, False, join, body, depth + 1)
                + [ind + "else:"] + hit + self.then(t, True, join, body, depth + 1))

    def build(self) -> Any:
        self.ipdom = self.post_dominators()
        main = f"{self.prefix}_main"
        src = [f"def {main}(S):"] + (self.region(self.init, None, "    ", 0) or ["    pass"])
        done: set[str] = set()
        while set(self.functions) - done:
            fn = sorted(set(self.functions) - done)[0]
            done.add(fn)
            name, stop = self.functions[fn]
            src += [f"def {fn}(S):"] + self.region(name, stop, "    ", 0) + ["    return None"]
        return exec_source("\n".join(src), self.ns, self.where)[main]



def compile_control(pc: PrimitiveCompiler, pj: dict[str, Any], tables: dict[str, Table],
                    where: str) -> Any:
    """The function ``control(S)`` of one pipeline of the JSON."""
    return ControlCompiler(pc, pj, tables, where).build()
