"""Capacity-aware rounding of LP-InArt: our addition to R-InArt's rounding step.

Alg. 2's independent draws ignore capacities: on fat-trees they open many low fan-in streams,
each costing its PS a full x_s f, and the plan ends far below the LP.  Here the LP's values
only rank the options; for a target rate f every (PS, worker) pair, most confident first,
takes the best option that still fits: a switch already streaming to that PS (costs the PS
nothing more), then new switches or the direct route by LP probability.  The largest f that
fits is found by bisection.  Feasibility in f is not monotone for a greedy, so every fitted
plan is scored by its true rate and the best one is kept.
"""

from __future__ import annotations

from control_plane.lp_inart import LPResult
from control_plane.paths import PathSets, arcs
from control_plane.plan import Flow, Plan
from control_plane.topology import Topology

EPS = 1e-9


class _Room:
    """Remaining capacity of switches, PSs and links at one target rate."""

    def __init__(self, topo: Topology) -> None:
        self.node = {n: max(topo.nodes[n].spare, 0.0) for n in topo.switches + topo.pss}
        self.link = {k: max(lk.spare, 0.0) for k, lk in topo.links.items()}

    def fits(self, nodes: list[str], path: tuple[str, ...], amount: float) -> bool:
        return all(self.node[n] >= amount - EPS for n in nodes) and all(
            self.link[a] >= amount - EPS for a in arcs(path))

    def take(self, nodes: list[str], path: tuple[str, ...], amount: float) -> None:
        for n in nodes:
            self.node[n] -= amount
        for a in arcs(path):
            self.link[a] -= amount


def _ranked(dist: dict[tuple[str, ...], float], fallback: tuple) -> list[tuple[str, ...]]:
    """Paths by LP weight, then the remaining path-set paths."""
    ranked = [p for p, _ in sorted(dist.items(), key=lambda kv: -kv[1])]
    return ranked + [p for p in fallback if p not in dist]


def fit_at(topo: Topology, paths: PathSets, lp: LPResult, split: dict[str, float],
           rate: float, scheme: str) -> Plan | None:
    """A plan whose loads fit at `rate`, or None if the greedy finds none."""
    room = _Room(topo)
    stream_paths: dict[str, list[str]] = {}
    flows = []
    pairs = sorted(((s, w) for s in topo.pss for w in topo.workers),
                   key=lambda sw: -max(lp.aggregate[sw].values(), default=0.0))
    for s, w in pairs:
        need = split[s] * rate
        placed = None
        options = []
        for v, prob in lp.aggregate[(s, w)].items():
            is_open = f"{v}->{s}" in stream_paths
            options.append((0 if is_open else 1, -prob, v))
        options.append((1, -lp.direct[(s, w)], None))
        for v in paths.switches_between(w, s):
            if v not in lp.aggregate[(s, w)]:
                options.append((0 if f"{v}->{s}" in stream_paths else 2, 0.0, v))
        for _, _, v in sorted(options, key=lambda o: (o[0], o[1], o[2] or "")):
            if v is None:
                for p in _ranked(lp.direct_paths.get((s, w), {}), paths.get(w, s)):
                    if room.fits([s], p, need):
                        room.take([s], p, need)
                        placed = Flow(w, s, None, p)
                        break
            else:
                key = f"{v}->{s}"
                for p in _ranked(lp.segment_paths.get((w, v), {}), paths.get(w, v)):
                    if key in stream_paths:
                        if room.fits([v], p, need):
                            room.take([v], p, need)
                            placed = Flow(w, s, v, p)
                            break
                        continue
                    if not room.fits([v], p, need):
                        continue
                    room.take([v], p, need)
                    for sp in _ranked(lp.stream_paths.get((v, s), {}), paths.get(v, s)):
                        if room.fits([s], sp, need):
                            room.take([s], sp, need)
                            stream_paths[key] = list(sp)
                            placed = Flow(w, s, v, p)
                            break
                    if not placed:
                        room.take([v], p, -need)  # give the segment back
                    if placed:
                        break
            if placed:
                break
        if placed is None:
            return None
        flows.append(placed)
    order = {(s, w): i for i, (s, w) in enumerate((s, w) for s in topo.pss for w in topo.workers)}
    flows.sort(key=lambda f: order[(f.ps, f.worker)])
    plan = Plan(scheme, topo, dict(split), flows, meta={"stream_paths": stream_paths})
    plan.rate = plan.evaluate().rate
    return plan


def fit_best(topo: Topology, paths: PathSets, lp: LPResult, split: dict[str, float],
             scheme: str, floor: float = 0.0, steps: int = 18) -> Plan | None:
    """Bisection on the target rate between `floor` and the LP optimum."""
    lo, hi = floor, lp.rate
    best: Plan | None = None
    for _ in range(steps):
        mid = (lo + hi) / 2 if best or lo > 0 else hi * 0.5
        plan = fit_at(topo, paths, lp, split, mid, scheme)
        if plan is None:
            hi = mid
        else:
            if best is None or plan.rate > best.rate:
                best = plan
            lo = max(mid, plan.rate)
        if hi - lo <= 1e-4 * max(hi, 1e-9):
            break
    return best
