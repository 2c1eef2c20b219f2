"""Common subexpression elimination over generated source, before it is compiled.

WHY: p4c's JSON repeats subexpressions (the testbed's saturating add evaluates the signed sum
of a register cell and a packet value three times per value, 32 values per packet), and our
generator translates them one by one.  Within a straight-line run of statements, a pure
subexpression (packet slots ``S[k]``, action data ``D[k]``, constants, arithmetic, no calls,
no division) seen a second time while none of the slots it reads was written in between is
computed once into a local before its first use.  Pure expressions cannot raise, so computing
one before a branch that might not have needed it changes nothing but the time.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import Any

MIN_SIZE = 6  # nodes in a subexpression worth a local (a plain S[k] is not)
OPERATIONS = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)
SCALARS = {ast.Constant: ("value",), ast.Name: ("id",), ast.Attribute: ("attr",)}  # key parts
D_READ = -1  # stands for "reads the action data D" among the slots an expression reads
PURE_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift,
               ast.RShift)
_names = itertools.count()


def slot_of(node: ast.AST) -> tuple[str, int] | None:
    """("S" or "D", k) for ``S[k]`` / ``D[k]`` with a constant k."""
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id in ("S", "D") and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)):
        return node.value.id, node.slice.value
    return None


@dataclass
class Info:
    """What one pass over an expression learns of each of its nodes."""

    key: Any  # structure, equal for equal expressions
    reads: frozenset[int] | None  # S slots (D_READ: action data) read; None: not pure
    size: int


def pure_operation(node: ast.AST) -> bool:
    """An operation that cannot raise or have effects, given pure operands."""
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.LShift, ast.RShift)):  # a negative count would raise
            return isinstance(node.right, ast.Constant)
        return isinstance(node.op, PURE_BINOPS)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.Invert, ast.USub, ast.Not))
    return isinstance(node, (ast.Compare, ast.BoolOp, ast.IfExp))


def operands(node: ast.AST) -> list[ast.AST]:
    """The expression children of a node (operators and contexts apart)."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Subscript):
        return [node.value, node.slice]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, (ast.Constant, ast.Name)):
        return []
    return [c for c in ast.iter_child_nodes(node)
            if not isinstance(c, (ast.operator, ast.unaryop, ast.cmpop, ast.boolop,
                                  ast.expr_context))]


def operators(node: ast.AST) -> list[ast.AST]:
    """The operator nodes of an operation (part of its identity)."""
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp)):
        return [node.op]
    if isinstance(node, ast.Compare):
        return list(node.ops)
    return []


def analyse(node: ast.AST, table: dict[int, Info]) -> Info:
    """Info of ``node`` and, in ``table`` by id, of every node under it (one pass)."""
    children = operands(node)
    infos = [analyse(c, table) for c in children]
    key: Any = (type(node), *(getattr(node, f) for f in SCALARS.get(type(node), ())),
                *(type(o) for o in operators(node)), *(i.key for i in infos))
    reads: frozenset[int] | None = None
    slot = slot_of(node)
    if isinstance(node, ast.Constant):
        reads = frozenset()
    elif slot is not None:
        reads = frozenset([slot[1] if slot[0] == "S" else D_READ])
    elif pure_operation(node):
        parts = [i.reads for i in infos]
        if all(r is not None for r in parts):
            reads = frozenset().union(*parts)  # type: ignore[arg-type]
    info = Info(key, reads, 1 + sum(i.size for i in infos))
    table[id(node)] = info
    return info


def writes(stmt: ast.stmt) -> set[int] | None:
    """S slots a simple statement writes (D_READ for a new action data tuple); None when it
    may write any of them."""
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    out: set[int] = set()
    for t in targets:
        if isinstance(t, ast.Name) and t.id == "D":
            out.add(D_READ)
        for node in ast.walk(t):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                    and node.value.id == "S":
                slot = slot_of(node)
                if slot is None:
                    return None
                out.add(slot[1])
    return out


class Block:
    """CSE over one straight-line list of statements."""

    def __init__(self) -> None:
        self.seen: dict[Any, tuple[int, frozenset[int]]] = {}  # key -> (first stmt, reads)
        self.hoisted: dict[Any, str] = {}  # key -> local holding it
        self.inserts: dict[int, list[ast.stmt]] = {}
        self.tables: dict[int, dict[int, Info]] = {}  # statement -> its nodes' Info

    def candidates(self, i: int, stmt: ast.stmt) -> list[tuple[ast.expr, Info]]:
        """Pure operations in a statement's value worth a local, largest first."""
        value = getattr(stmt, "value", None)
        if not isinstance(value, ast.expr):
            return []
        table = self.tables[i] = {}
        analyse(value, table)
        found = [(n, table[id(n)]) for n in ast.walk(value)
                 if isinstance(n, OPERATIONS) and table[id(n)].reads is not None
                 and table[id(n)].size >= MIN_SIZE]
        return sorted(found, key=lambda item: item[1].size, reverse=True)

    def visit(self, i: int, stmt: ast.stmt, stmts: list[ast.stmt]) -> None:
        nodes = self.candidates(i, stmt)
        counts: dict[Any, int] = {}
        for _, info in nodes:
            counts[info.key] = counts.get(info.key, 0) + 1
        gone: set[int] = set()  # nodes inside a subexpression already replaced
        for node, info in nodes:
            key = info.key
            if id(node) in gone:
                continue
            if key in self.hoisted:  # computed before, still valid: use it here too
                gone |= {id(n) for n in ast.walk(node)}
                Replace(key, self.hoisted[key], self.tables[i]).visit(stmt)
                continue
            if key not in self.seen and counts[key] < 2:
                continue
            gone |= {id(n) for n in ast.walk(node)}
            first = self.seen[key][0] if key in self.seen else i
            name = f"_c{next(_names)}"
            self.hoisted[key] = name
            self.inserts.setdefault(first, []).append(
                ast.Assign(targets=[ast.Name(name, ast.Store())], value=node, lineno=0))
            for j in range(first, i + 1):
                Replace(key, name, self.tables.get(j, {})).visit(stmts[j])
        for _, info in nodes:
            if info.key not in self.seen:
                assert info.reads is not None
                self.seen[info.key] = (i, info.reads)
        written = writes(stmt)
        for key, (_, reads) in list(self.seen.items()):
            if written is None or reads & written:
                del self.seen[key]
                self.hoisted.pop(key, None)


class Replace(ast.NodeTransformer):
    """Replace every occurrence of one subexpression (by its key) with a local; ``table``
    is the statement's analysis (nodes replaced earlier are gone from the tree, the rest
    kept their Info)."""

    def __init__(self, key: Any, name: str, table: dict[int, Info]) -> None:
        self.key, self.name, self.table = key, name, table

    def generic_visit(self, node: ast.AST) -> ast.AST:
        info = self.table.get(id(node))
        if isinstance(node, ast.expr) and info is not None and info.key == self.key:
            return ast.Name(self.name, ast.Load())
        return super().generic_visit(node)


def optimize_block(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """CSE in straight-line runs of ``stmts`` (and, separately, in every nested block)."""
    for stmt in stmts:
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                setattr(stmt, field, optimize_block(inner))
    block = Block()
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr)):
            block.visit(i, stmt, stmts)
        else:  # a branch or loop: it may write anything, and tests run in it are its own
            block.seen.clear()
            block.hoisted.clear()
    out: list[ast.stmt] = []
    for i, stmt in enumerate(stmts):
        out += block.inserts.get(i, [])
        out.append(stmt)
    return out


def optimize(source: str) -> str:
    """The same functions, with common subexpressions computed once."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            node.body = optimize_block(node.body)
    return ast.unparse(tree)
