"""Common subexpression elimination (optimize.py) never changes what generated code computes."""

from __future__ import annotations

from typing import Any

import pytest

from emulation.targets.embedded.optimize import optimize


def run(source: str, S: list[int], D: tuple[int, ...] = ()) -> tuple[list[int], str]:
    """Run ``f(S, D)`` from ``source`` before and after optimizing; both must agree."""
    results = []
    for src in (source, optimize(source)):
        env: dict[str, Any] = {}
        exec(src, env)  # noqa: S102 - test source
        state = list(S)
        env["f"](state, D)
        results.append(state)
    assert results[0] == results[1]
    return results[1], optimize(source)


@pytest.mark.parametrize("body, state, computed", [
    # a repeated expression is computed once
    (["S[0] = ((S[1] + S[2]) * 3 & 255) + 1", "S[3] = ((S[1] + S[2]) * 3 & 255) + 2"],
     [28, 4, 5, 29], 1),
    # a write to a slot the expression reads ends the reuse
    (["S[0] = (S[1] + S[2]) * 3 + 1", "S[1] = 7", "S[3] = (S[1] + S[2]) * 3 + 1"],
     [28, 7, 5, 37], 2),
])
def test_common_subexpressions(body: list[str], state: list[int], computed: int) -> None:
    src = "def f(S, D):\n" + "".join(f"    {line}\n" for line in body)
    got, out = run(src, [0, 4, 5, 0])
    assert got == state
    assert out.count("* 3") == computed


def test_writes_at_computed_slots_and_new_action_data_end_all_reuse() -> None:
    src = ("def f(S, D):\n"
           "    S[0] = (S[1] + D[0]) * 3 + 1\n"
           "    S[S[4]] = 9\n"
           "    S[2] = (S[1] + D[0]) * 3 + 1\n"
           "    D = (5,)\n"
           "    S[3] = (S[1] + D[0]) * 3 + 1\n")
    state, _ = run(src, [0, 4, 0, 0, 1], (2,))
    assert state == [19, 9, 34, 43, 1]


def test_branches_are_their_own_runs() -> None:
    src = ("def f(S, D):\n"
           "    x = (S[1] + S[2]) * 3 + 1\n"
           "    if S[0]:\n"
           "        S[1] = 0\n"
           "    S[3] = (S[1] + S[2]) * 3 + 1\n")
    state, _ = run(src, [1, 4, 5, 0])
    assert state == [1, 0, 5, 16]
