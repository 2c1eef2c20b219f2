"""Phase 2, step 2 of R-InArt (seed paper Alg. 2): randomized rounding of LP-InArt.

For each (PS, worker) one uniform draw picks the aggregation switch or the direct route with
the LP's probabilities (the paper's example: y = 0.1 direct, (0.4, 0.5) on two switches gives
switch 1 below 0.4, switch 2 below 0.9, else direct).  Each chosen segment's path is rounded
the same way from the LP's path flows; a segment the LP left empty takes its first path.
Several seeded trials are drawn and the plan with the best *integral* rate is kept.
"""

from __future__ import annotations

import random

from control_plane.lp_inart import LPResult
from control_plane.paths import PathSets
from control_plane.plan import Flow, Plan
from control_plane.topology import Topology


def _draw(rng: random.Random, options: list[tuple[object, float]]) -> object:
    """Pick an option with probability proportional to its weight (first if all zero)."""
    total = sum(w for _, w in options)
    if total <= 0:
        return options[0][0]
    u = rng.random() * total
    acc = 0.0
    for item, weight in options:
        acc += weight
        if u < acc:
            return item
    return options[-1][0]


def _path(rng: random.Random, dist: dict, fallback: tuple[tuple[str, ...], ...]) -> tuple:
    return _draw(rng, list(dist.items())) if dist else fallback[0]


def round_once(topo: Topology, paths: PathSets, lp: LPResult, split: dict[str, float],
               rng: random.Random, scheme: str) -> Plan:
    """One randomized rounding of the LP into an integral plan."""
    flows = []
    for s in topo.pss:
        for w in topo.workers:
            options = [(None, lp.direct[(s, w)])]
            options += sorted(lp.aggregate[(s, w)].items())
            v = _draw(rng, options)
            if v is None:
                path = _path(rng, lp.direct_paths.get((s, w), {}), paths.get(w, s))
            else:
                path = _path(rng, lp.segment_paths.get((w, v), {}), paths.get(w, v))
            flows.append(Flow(w, s, v, path))
    stream_paths = {}
    for f in flows:
        if f.aggregate_at is not None:
            key = f"{f.aggregate_at}->{f.ps}"
            if key not in stream_paths:
                dist = lp.stream_paths.get((f.aggregate_at, f.ps), {})
                stream_paths[key] = list(_path(rng, dist, paths.get(f.aggregate_at, f.ps)))
    return Plan(scheme=scheme, topology=topo, partition=dict(split), flows=flows,
                meta={"stream_paths": stream_paths})


def round_best(topo: Topology, paths: PathSets, lp: LPResult, split: dict[str, float],
               trials: int, seed: int, scheme: str) -> Plan:
    """Best of `trials` seeded roundings by integral rate."""
    rng = random.Random(seed)
    best: Plan | None = None
    for _ in range(max(trials, 1)):
        plan = round_once(topo, paths, lp, split, rng, scheme)
        plan.rate = plan.evaluate().rate
        if best is None or plan.rate > best.rate:
            best = plan
    assert best is not None
    return best
