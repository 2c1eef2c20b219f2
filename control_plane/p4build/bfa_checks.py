"""Checks of a Tofino build against its assembly (.bfa): which warnings of the assembler
(bfas) it may carry, and that its parser kept every select's match.

Two of bfas's checks look at one stage's tables in pairs and cannot see that a P4 ``if``/
``else`` chooses between them: its exclusivity test follows next-table links, and the
compiler implements ``if (c) A else B`` with a gateway on A whose payload runs A's action on
one side and whose other side runs B, so B looks like A's successor.  Both warnings then name
tables that execute alternative RegisterActions of one Register (``round_claim`` and
``round_check`` on ``slot_round``, say).  Such tables drive the one stateful ALU of that
register in that stage, which runs one instruction per packet, so they cannot both run on a
packet; they write the same containers from that ALU's output.  A warning is allowed only
when the .bfa shows both of its tables on the same stateful ALU; anything else is refused.

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
                   r"action \S+$")
_SLOT_AND = re.compile(r"warning: and table (\S+) action \S+$")
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


def _pairs(lines: list[str]) -> Iterable[tuple[int, tuple[str, ...], tuple[str, str] | None]]:
    """(index, lines, table pair) of each bfas table-pair warning; pair None if unreadable."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := _ACTION_BUS.search(line):
            yield i, (line,), (m.group(1), m.group(2))
        elif m := _SLOT.search(line):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if n := _SLOT_AND.search(nxt):
                yield i, (line, nxt), (m.group(1), n.group(1))
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
    allowed: set[int] = set()
    for i, group, pair in _pairs(lines):
        if pair is None:
            continue
        a, b = pair
        if a in alus and alus.get(b) == alus[a]:
            allowed.update(range(i, i + len(group)))
    return [line for i, line in enumerate(lines) if i not in allowed]
