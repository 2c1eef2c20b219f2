"""The judge of the Tofino assembler's table-pair warnings against the .bfa, on .bfa excerpts
shaped as p4c-barefoot writes them (the full build runs it on the real one)."""

from __future__ import annotations

import pytest

from control_plane.p4build.bfa_checks import judge, miss_successors
from control_plane.p4build.sources import BuildError

# routing as bf-p4c lays out `if (!route_pair.apply().hit) route_dst.apply()`
ROUTES = """stage 11 ingress:
  exact_match route_pair_0 6:
    p4: { name: InaIngress.route_pair, size: 16384 }
    hit: [  END ]
    miss:  route_dst_0
    actions:
      InaIngress.set_next_hop(1, 13):
      - hit_allowed: { allowed: true }
      - default_action: { allowed: false, reason: none }
      - next_table_miss:  route_dst_0
      NoAction(-1, 0):
      - hit_allowed: { allowed: false, reason: user_indicated_default_only }
      - default_only_action: { allowed: true, is_constant: true }
  ternary_match route_dst_0 7:
    hit: [  END ]
    miss:  END
  ternary_indirect route_dst_0$tind:
    actions:
      InaIngress.set_next_hop(0, 14):
      - default_action: { allowed: false, reason: none }
"""
SLOT = ["inart.bfa:7523: warning: Conflicting instruction slot usage for non-exlusive table "
        "route_dst_0$tind action InaIngress.set_next_hop",
        "inart.bfa:7317: warning: and table route_pair_0 action InaIngress.set_next_hop"]


def _warnings(lines: list[str]) -> list[str]:
    return [line for line in lines if "warning" in line]


def test_a_table_applied_on_the_others_miss_is_exclusive():
    assert miss_successors(ROUTES) == {
        "route_pair_0": ("route_dst_0", {"END"}, {"InaIngress.set_next_hop"})}
    assert _warnings(judge("\n".join(SLOT), ROUTES)) == []


def test_an_action_that_may_run_on_a_miss_is_not():
    bfa = ROUTES.replace("      - default_action: { allowed: false, reason: none }\n"
                         "      - next_table_miss", "      - next_table_miss", 1)
    assert _warnings(judge("\n".join(SLOT), bfa)) == SLOT


def test_a_successor_on_a_hit_is_not():
    bfa = ROUTES.replace("    hit: [  END ]\n    miss:  route_dst_0",
                         "    hit: [  route_dst_0 ]\n    miss:  route_dst_0", 1)
    assert _warnings(judge("\n".join(SLOT), bfa)) == SLOT


def test_an_unrelated_warning_stays():
    other = ["inart.bfa:1: warning: something else"]
    assert judge("\n".join(other + SLOT), ROUTES) == other


def test_the_parser_bug_is_refused_with_its_fix():
    with pytest.raises(BuildError, match="pull/5753"):
        judge("x.bfa:430: warning: Can't match parser state due to previous match", ROUTES)
