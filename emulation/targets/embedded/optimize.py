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

MIN_SIZE = 6  # nodes in a subexpression worth a local (a plain S[k] is not)
OPERATIONS = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)
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


def pure_reads(node: ast.AST) -> set[int] | None:
    """The S slots a pure expression reads, or None when it is not pure."""
    if isinstance(node, ast.Constant):
        return set()
    slot = slot_of(node)
    if slot is not None:
        return {slot[1]} if slot[0] == "S" else {D_READ}
    parts: list[ast.AST]
    if isinstance(node, ast.BinOp) and isinstance(node.op, PURE_BINOPS):
        if isinstance(node.op, (ast.LShift, ast.RShift)) and not isinstance(node.right,
                                                                            ast.Constant):
            return None  # a negative shift count would raise
        parts = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.USub,
                                                                ast.Not)):
        parts = [node.operand]
    elif isinstance(node, ast.Compare):
        parts = [node.left, *node.comparators]
    elif isinstance(node, ast.BoolOp):
        parts = list(node.values)
    elif isinstance(node, ast.IfExp):
        parts = [node.test, node.body, node.orelse]
    else:
        return None
    reads: set[int] = set()
    for part in parts:
        r = pure_reads(part)
        if r is None:
            return None
        reads |= r
    return reads


def size(node: ast.AST) -> int:
    return sum(1 for _ in ast.walk(node))


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
        self.seen: dict[str, tuple[int, set[int], ast.expr]] = {}  # key -> first stmt
        self.hoisted: dict[str, str] = {}  # key -> local holding it
        self.inserts: dict[int, list[ast.stmt]] = {}

    def candidates(self, stmt: ast.stmt) -> list[ast.expr]:
        """Pure subexpressions of a statement's values, largest first."""
        value = getattr(stmt, "value", None)
        if not isinstance(value, ast.expr):
            return []
        found = [n for n in ast.walk(value)
                 if isinstance(n, OPERATIONS) and size(n) >= MIN_SIZE
                 and pure_reads(n) is not None]
        return sorted(found, key=size, reverse=True)

    def visit(self, i: int, stmt: ast.stmt, stmts: list[ast.stmt]) -> None:
        nodes = self.candidates(stmt)
        counts: dict[str, int] = {}
        for node in nodes:
            key = ast.dump(node)
            counts[key] = counts.get(key, 0) + 1
        gone: set[int] = set()  # nodes inside a subexpression already replaced
        for node in nodes:
            key = ast.dump(node)
            if id(node) in gone:
                continue
            if key in self.hoisted:  # computed before, still valid: use it here too
                gone |= {id(n) for n in ast.walk(node)}
                Replace(key, self.hoisted[key]).visit(stmt)
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
                Replace(key, name).visit(stmts[j])
        for node in nodes:
            key = ast.dump(node)
            if key not in self.seen:
                self.seen[key] = (i, pure_reads(node) or set(), node)
        written = writes(stmt)
        for key, (_, reads, _) in list(self.seen.items()):
            if written is None or reads & written:
                del self.seen[key]
                self.hoisted.pop(key, None)


class Replace(ast.NodeTransformer):
    """Replace every occurrence of one subexpression (by its dump) with a local."""

    def __init__(self, key: str, name: str) -> None:
        self.key, self.name = key, name

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and ast.dump(node) == self.key:
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
    return ast.unparse(ast.fix_missing_locations(tree))
