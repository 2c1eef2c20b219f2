"""Phase 2, step 2 of R-InArt (InArt paper Alg. 2): randomized rounding of LP-InArt.

For each (PS, worker) one uniform draw picks the aggregation switch or the direct route with
the LP's probabilities (the paper's example: y = 0.1 direct, (0.4, 0.5) on two switches gives
switch 1 below 0.4, switch 2 below 0.9, else direct).  Each chosen segment's path is rounded
the same way from the LP's path flows; a segment the LP left empty takes its first path.
Several seeded trials are drawn and the plan with the best *integral* rate is kept.
"""

from __future__ import annotations

import random

from control_plane.model.plan import Flow, Plan
from control_plane.model.topology import Topology
from control_plane.solver.lp_inart import LPResult
from control_plane.solver.paths import PathSets


def _path(rng: random.Random, dist: dict, fallback: tuple[tuple[str, ...], ...]) -> tuple:
    return _pick(rng.random(), list(dist.items())) if dist else fallback[0]


def _pick(u: float, options: list[tuple[object, float]]) -> object:
    """The option at quantile u of the cumulative weights (first if all zero)."""
    total = sum(w for _, w in options)
    if total <= 0:
        return options[0][0]
    acc = 0.0
    for item, weight in options:
        acc += weight
        if u * total < acc:
            return item
    return options[-1][0]


def round_once(topo: Topology, paths: PathSets, lp: LPResult, split: dict[str, float],
               rng: random.Random, scheme: str, correlated: bool = True) -> Plan:
    """One randomized rounding of the LP into an integral plan.

    Each (s, w) still picks switch v with the LP's probability y_v^{s,w}.  With `correlated`,
    all workers of one PS share a uniform draw over one random order of the switches, so
    workers with similar LP values pick the same switch: the marginals of Alg. 2 are kept
    but far fewer low fan-in streams are opened (each costs the PS a full x_s f).
    """
    flows = []
    order = {v: i for i, v in enumerate(rng.sample(topo.switches, len(topo.switches)))}
    for s in topo.pss:
        shared = rng.random()
        for w in topo.workers:
            options = sorted(lp.aggregate[(s, w)].items(), key=lambda kv: order[kv[0]])
            options.append((None, lp.direct[(s, w)]))
            v = _pick(shared if correlated else rng.random(), options)
            if v is None:
                path = _path(rng, lp.direct_paths.get((s, w), {}), paths.get(w, s))
            else:
                path = _path(rng, lp.segment_paths.get((s, w, v), {}),
                             paths.segments(w, v, s))
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
