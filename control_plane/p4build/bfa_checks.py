"""Checks of a Tofino build against its assembly (.bfa): which warnings of the assembler
(bfas) it may carry, and that its parser kept every select's match.

Two of bfas's checks look at one stage's tables in pairs and cannot see that a P4 ``if``/
``else`` chooses between them: its exclusivity test follows next-table links, and the
compiler implements ``if (c) A else B`` with a gateway on A whose payload runs A's action on
one side and whose other side runs B, so B looks like A's successor.  Both warnings then name
tables that execute alternative RegisterActions of one Register (``round_claim`` and
``round_check`` on ``slot_round``, say).  Such tables drive the one stateful ALU of that
register in that stage, which runs one instruction per packet, so they cannot both run on a
packet; they write the same containers from that ALU's output.  The same test sees a table
applied on another's miss (``if (!route_pair.apply().hit) route_dst.apply()``) as following
that table's hit action too.  A warning is allowed only when the .bfa shows both of its
tables on the same stateful ALU, or (for an instruction slot) one table reached only on the
other's miss while the other's action named in the warning cannot run on a miss (its
``default_action`` not allowed); anything else is refused.

bfas's "Can't match parser state due to previous match" is the sign of p4c's Tofino-1
parser match register bug (every select becomes its first transition), fixed upstream by
https://github.com/p4lang/p4c/pull/5753; a build showing it is refused with that cause, and
so is a build whose .bfa has a parser state with several transitions but no ``match:`` (the
bug itself, whether or not the assembler warned).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from control_plane.p4build.sources import BuildError

PARSER_BUG = "Can't match parser state due to previous match"
PARSER_FIX = "https://github.com/p4lang/p4c/pull/5753"
_ACTION_BUS = re.compile(r"warning: Action bus byte \d+ set in table (\S+) and table (\S+)$")
_SLOT = re.compile(r"warning: Conflicting instruction slot usage for non-exlusive table (\S+) "
                   r"action (\S+)$")
_SLOT_AND = re.compile(r"warning: and table (\S+) action (\S+)$")
_HIT = re.compile(r"^    hit: \[(.*)\]$")
_MISS = re.compile(r"^    miss:\s+(\S+)$")
_ACTION = re.compile(r"^      (\S+)\(-?\d+, -?\d+\):$")
_NO_DEFAULT = "      - default_action: { allowed: false"
# a table of a stage: "  hash_action tbl_inart466 3:" (kind, name, logical id)
_TABLE = re.compile(r"^  [a-z_]+ (\S+) \d+:$")
_STATEFUL = re.compile(r"^    stateful: ([^(\s]+)")
# in a "parser ingress:" block: a state (indent 4), its match (indent 6) and its transitions
# (indent 6, keyed by a value pattern: *, 0x.., 0b.. or a number)
_STATE = re.compile(r"^    (\S+):$")
_MATCH = re.compile(r"^      match:")
_TRANSITION = re.compile(r"^      (\*|0x[0-9a-fA-F*]+|0b[01*]+|\d+):")


def stateful_alus(bfa: str) -> dict[str, str]:
    """Table name -> the stateful ALU its actions drive, for every table that drives one."""
    alus: dict[str, str] = {}
    table = None
    for line in bfa.splitlines():
        m = _TABLE.match(line)
        if m:
            table = m.group(1)
            continue
        m = _STATEFUL.match(line)
        if m and table is not None:
            alus[table] = m.group(1)
    return alus


def _match_table(name: str) -> str:
    """The match table of an attached one (``route_dst_0$tind`` -> ``route_dst_0``)."""
    return name.split("$", 1)[0]


def miss_successors(bfa: str) -> dict[str, tuple[str, set[str], set[str]]]:
    """Table -> (its miss successor, its hit successors, its actions that cannot run on a
    miss), for every table whose miss goes on to another table."""
    tables: dict[str, tuple[str, set[str], set[str]]] = {}
    table = action = None
    miss, hits, hit_only = "", set(), set()

    def close() -> None:
        if table is not None and miss and miss != "END":
            tables[table] = (miss, hits, hit_only)

    for line in bfa.splitlines():
        if m := _TABLE.match(line):
            close()
            table, action, miss, hits, hit_only = m.group(1), None, "", set(), set()
        elif table is None:
            continue
        elif m := _HIT.match(line):
            hits = set(m.group(1).split())
        elif m := _MISS.match(line):
            miss = m.group(1)
        elif m := _ACTION.match(line):
            action = m.group(1)
        elif line.startswith(_NO_DEFAULT) and action is not None:
            hit_only.add(action)
    close()
    return tables


def _miss_only(first: tuple[str, str], second: tuple[str, str],
               successors: dict[str, tuple[str, set[str], set[str]]]) -> bool:
    """True when one table runs only on the other's miss and the other's action in the pair
    runs only on a hit."""
    for (pred, pred_action), (succ, _) in ((first, second), (second, first)):
        got = successors.get(_match_table(pred))
        if got is None:
            continue
        miss, hits, hit_only = got
        if (miss == _match_table(succ) and _match_table(succ) not in hits
                and pred_action in hit_only):
            return True
    return False


def parser_selects(bfa: str) -> tuple[int, list[str]]:
    """(states that select among several transitions, those of them without a match)."""
    selecting, unmatched = 0, []
    state: str | None = None
    transitions, matched = 0, False

    def close() -> None:
        nonlocal selecting
        if state is not None and transitions > 1:
            selecting += 1
            if not matched:
                unmatched.append(state)

    gress = ""
    for line in bfa.splitlines():
        if line and not line[0].isspace():
            close()
            state = None
            gress = line[len("parser "):].rstrip(":") if line.startswith("parser ") else ""
            continue
        if not gress:
            continue
        if m := _STATE.match(line):
            close()
            state, transitions, matched = f"{gress} {m.group(1)}", 0, False
        elif _MATCH.match(line):
            matched = True
        elif _TRANSITION.match(line):
            transitions += 1
    close()
    return selecting, unmatched


Pair = tuple[tuple[str, str | None], tuple[str, str | None]]  # (table, action) twice


def _pairs(lines: list[str]) -> Iterable[tuple[int, tuple[str, ...], Pair | None]]:
    """(index, lines, pair) of each bfas table-pair warning; pair None if unreadable.  An
    action bus warning names no actions."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := _ACTION_BUS.search(line):
            yield i, (line,), ((m.group(1), None), (m.group(2), None))
        elif m := _SLOT.search(line):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if n := _SLOT_AND.search(nxt):
                yield i, (line, nxt), ((m.group(1), m.group(2)), (n.group(1), n.group(2)))
                i += 1
            else:
                yield i, (line,), None
        i += 1


def judge(diagnostics: str, bfa: str) -> list[str]:
    """The diagnostic lines that make a build unusable, after the allowed pairs are taken out.

    Raises BuildError at once for the parser match register bug."""
    lines = diagnostics.splitlines()
    if any(PARSER_BUG in line for line in lines):
        raise BuildError(
            f"the Tofino assembler says '{PARSER_BUG}': this p4c's Tofino back end drops the "
            f"parser's select keys (every packet would take a select's first transition). "
            f"Use a back end with the fix {PARSER_FIX} (p4c newer than September 2026, or "
            f"that change applied to backends/tofino/bf-p4c/parde/"
            f"allocate_parser_match_register.cpp)")
    alus = stateful_alus(bfa)
    successors = miss_successors(bfa)
    allowed: set[int] = set()
    for i, group, pair in _pairs(lines):
        if pair is None:
            continue
        (a, action_a), (b, action_b) = pair
        same_alu = a in alus and alus.get(b) == alus[a]
        miss_only = (action_a is not None and action_b is not None
                     and _miss_only((a, action_a), (b, action_b), successors))
        if same_alu or miss_only:
            allowed.update(range(i, i + len(group)))
    return [line for i, line in enumerate(lines) if i not in allowed]
