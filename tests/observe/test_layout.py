"""The web view's layout: tiers as the usual drawings have them, and marks kept apart from
fig1 up to fattree:8 (208 nodes)."""

from __future__ import annotations

import itertools
import math

import pytest

from control_plane.model.topologies import build_topology
from control_plane.observe.layout import height, layout, tiers


def test_fig1_has_hosts_under_their_switch() -> None:
    topo = build_topology("fig1")
    pos = layout(topo)
    assert tiers(topo)["v1"] == tiers(topo)["v2"] == 1
    assert all(pos[h][1] > pos["v1"][1] for h in topo.workers + topo.pss)
    left = [h for h in topo.workers + topo.pss if topo.tor(h) == "v1"]
    right = [h for h in topo.workers + topo.pss if topo.tor(h) == "v2"]
    assert max(pos[h][0] for h in left) < min(pos[h][0] for h in right)
    assert pos["v1"][0] < pos["v2"][0]


@pytest.mark.parametrize("spec, top", [("fattree:4", 3), ("fattree:8", 3),
                                       ("leafspine:2,2,3", 2)])
def test_tiers_and_marks_apart(spec: str, top: int) -> None:
    topo = build_topology(spec)
    pos = layout(topo)
    assert set(pos) == set(topo.nodes) and max(tiers(topo).values()) == top
    closest = min(math.dist(pos[a], pos[b]) for a, b in itertools.combinations(pos, 2))
    assert closest >= 12.0, closest  # the page's smallest marks are 14 units wide
    assert all(0 <= y <= height(topo) for _, y in pos.values())
