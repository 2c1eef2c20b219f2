"""Integral packing at a target rate, guided by the count LP: our rounding of LP-InArt.

Why not Alg. 2's independent draws: they ignore capacities, and a fractional z[s,v] rounded
up costs the PS a whole stream.  Here the target rate f fixes every flow's rate u_s = f x_s,
so a plan is feasible at f exactly when its flows fit the capacities; `pack` builds one:

1. LP-guided: streams (s, v) in decreasing order of the workers the count LP aggregates there
   take about that many workers of each class (rounded), if they fit;
2. the rest, one (PS, worker) pair at a time: an open stream with room (LP's choice first),
   else a new stream at the candidate switch with the most room, else the direct route;
3. repair when a pair fits nowhere: move a flow already aggregated at one of its switches to
   another open stream with room, then retry.

Paths are chosen among the path set by the LP's weight, then by the most residual capacity.
`best_pack` bisects on f; feasibility is not monotone for a greedy, so every packed plan is
scored by its true rate and the best is kept.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict, deque

import numpy as np

from control_plane.model.plan import MAX_FAN_IN, Flow, Plan
from control_plane.model.topology import Topology
from control_plane.solver.count_lp import CountLP, CountSolution
from control_plane.solver.paths import PathSets
from control_plane.solver.resplit import refined

EPS = 1e-9
RESTARTS = 4  # randomized largest-fan-in-first packings per target rate
DRAWS = 8  # randomized LP-guided packings per target rate
LIGHT_RESTARTS, LIGHT_DRAWS = 0, 2  # the same below the top target
PERTURB = 2  # packings of perturbed LP solutions at the top target
PERTURB_MAX_VARS = 4000  # larger LPs are not perturbed: a re-solve there costs 0.3-0.5 s
Path_ = tuple[str, ...]


class Packer:
    """Residual capacities and decisions of one packing at rate f."""

    def __init__(self, topo: Topology, paths: PathSets, split: dict[str, float], f: float,
                 guide: CountSolution | None) -> None:
        self.topo, self.paths, self.split, self.f, self.guide = topo, paths, split, f, guide
        self.node = {n: max(topo.nodes[n].spare, 0.0) for n in topo.switches + topo.pss}
        self.link = {k: max(lk.spare, 0.0) for k, lk in topo.links.items()}
        self.unit = {s: f * split[s] for s in topo.pss}
        self.stream: dict[tuple[str, str], Path_] = {}
        self.fan: dict[tuple[str, str], int] = defaultdict(int)
        self.flow: dict[tuple[str, str], Flow] = {}
        self.cls_of = {w: ci for ci, c in enumerate(paths.classes) for w in c.members}
        # v -> the pairs aggregated there, in the order placed (a dict: deterministic order)
        self.at_switch: dict[str, dict[tuple[str, str], None]] = defaultdict(dict)
        self.arcs = paths.arcs
        self.pss, self.workers = topo.pss, topo.workers  # sorted on every access

    # -- capacity bookkeeping ----------------------------------------------------------------
    def _fits_path(self, path: Path_, need: float) -> bool:
        link = self.link
        return all(link[a] >= need - EPS for a in self.arcs(path))

    def _take_path(self, path: Path_, amount: float) -> None:
        for a in self.arcs(path):
            self.link[a] -= amount

    def _slack(self, path: Path_) -> float:
        return min((self.link[a] for a in self.arcs(path)), default=math.inf)

    def _choose(self, options: tuple[Path_, ...], weights: dict[Path_, float],
                need: float, member: str | None = None) -> Path_ | None:
        """The fitting path with the largest LP weight, then the most residual capacity;
        `member` translates a class representative's paths to one member's."""
        best, best_key = None, None
        cls = self.paths.classes[self.cls_of[member]] if member is not None else None
        for p in options:
            real = cls.path_for(member, p) if cls is not None else p
            if not self._fits_path(real, need):
                continue
            key = (weights.get(p, 0.0) > 1e-6, self._slack(real))
            if best_key is None or key > best_key:
                best, best_key = real, key
        return best

    # -- placing one (PS, worker) pair -------------------------------------------------------
    def _segment(self, s: str, w: str, v: str, need: float) -> Path_ | None:
        ci = self.cls_of[w]
        rep = self.paths.classes[ci].rep
        weights = self.guide.segment.get((s, ci, v), {}) if self.guide else {}
        return self._choose(self.paths.segments(rep, v, s), weights, need, w)

    def aggregate(self, s: str, w: str, v: str) -> bool:
        """Aggregate (s, w) at v, opening the stream (s, v) if needed; False if it won't fit
        (capacities, or the stream already has MAX_FAN_IN workers: fattree:32's switches
        have room for more at its rates)."""
        need = self.unit[s]
        if self.node[v] < need - EPS or self.fan.get((s, v), 0) >= MAX_FAN_IN:
            return False
        seg = self._segment(s, w, v, need)
        if seg is None:
            return False
        if (s, v) not in self.stream:
            if self.node[s] < need - EPS:
                return False
            self._take_path(seg, need)  # the segment may share links with the stream
            weights = self.guide.stream.get((s, v), {}) if self.guide else {}
            sp = self._choose(self.paths.get(v, s), weights, need)
            self._take_path(seg, -need)
            if sp is None:
                return False
            self.stream[(s, v)] = sp
            self.node[s] -= need
            self._take_path(sp, need)
        self.node[v] -= need
        self._take_path(seg, need)
        self.fan[(s, v)] += 1
        self.flow[(s, w)] = Flow(w, s, v, seg)
        self.at_switch[v][(s, w)] = None
        return True

    def direct(self, s: str, w: str) -> bool:
        need = self.unit[s]
        if self.node[s] < need - EPS:
            return False
        ci = self.cls_of[w]
        weights = self.guide.d.get((s, ci), {}) if self.guide else {}
        path = self._choose(self.paths.get(self.paths.classes[ci].rep, s), weights, need, w)
        if path is None:
            return False
        self.node[s] -= need
        self._take_path(path, need)
        self.flow[(s, w)] = Flow(w, s, None, path)
        return True

    def remove(self, s: str, w: str) -> Flow:
        """Undo a pair's placement (closing its stream when it was the last member)."""
        flow = self.flow.pop((s, w))
        need = self.unit[s]
        self._take_path(flow.path, -need)
        v = flow.aggregate_at
        if v is None:
            self.node[s] += need
            return flow
        self.node[v] += need
        self.at_switch[v].pop((s, w), None)
        self.fan[(s, v)] -= 1
        if self.fan[(s, v)] == 0:
            del self.fan[(s, v)]
            self.node[s] += need
            self._take_path(self.stream.pop((s, v)), -need)
        return flow

    def place(self, s: str, w: str) -> bool:
        """Best option for a leftover pair: an open stream with room, an open stream made
        room for by a chain of moves (neither costs the PS anything), a new stream at the
        candidate switch with the most room, the direct route."""
        ci = self.cls_of[w]
        cands = self.paths.switches_between(self.paths.classes[ci].rep, s)
        lp = self.guide.n if self.guide else {}
        open_ = [v for v in cands if (s, v) in self.stream]
        open_.sort(key=lambda v: (-lp.get((s, ci, v), 0.0), -self.node[v]))
        if any(self.aggregate(s, w, v) for v in open_) or self.chain(s, w):
            return True
        fresh = [v for v in cands if (s, v) not in self.stream]
        fresh.sort(key=lambda v: (-self.node[v], -lp.get((s, ci, v), 0.0)))
        if any(self.aggregate(s, w, v) for v in fresh) or self.direct(s, w):
            return True
        return self.merge(s) and (any(self.aggregate(s, w, v) for v in fresh) or
                                  self.direct(s, w))

    def merge(self, s: str) -> bool:
        """Free one unit of PS s: empty its smallest stream into its other open streams
        (directly or by chains of moves), which closes it.  Undone if that fails."""
        for key in sorted((k for k in self.fan if k[0] == s), key=lambda k: self.fan[k]):
            v = key[1]
            members = sorted(pair for pair in self.at_switch[v] if pair[0] == s)
            moved: list[tuple[Flow, tuple[str, str]]] = []
            for pair in members:
                old = self.remove(*pair)
                if self._rehome(pair, v):
                    moved.append((old, pair))
                    continue
                self._restore(old)
                for back, again in reversed(moved):
                    self.remove(*again)
                    self._restore(back)
                break
            else:
                return True
        return False

    def _rehome(self, pair: tuple[str, str], avoid: str) -> bool:
        """Place an aggregated pair at another open stream of its PS than `avoid`."""
        s, w = pair
        rep = self.paths.classes[self.cls_of[w]].rep
        others = [u for u in self.paths.switches_between(rep, s)
                  if u != avoid and (s, u) in self.stream]
        others.sort(key=lambda u: -self.node[u])
        return any(self.aggregate(s, w, u) for u in others) or self.chain(s, w, avoid)

    def chain(self, s: str, w: str, avoid: str | None = None) -> bool:
        """Augmenting path for a pair whose open streams sit on full switches: a breadth-first
        search over switches for a chain of moves (a flow aggregated at one switch moves to
        another open stream of its own PS) that ends at a switch with room; applied from the
        end, so each move finds the room the next one freed.  This is what a max-flow
        assignment of pairs to open streams does; undone if a path does not fit."""
        ci = self.cls_of[w]
        start = [v for v in self.paths.switches_between(self.paths.classes[ci].rep, s)
                 if (s, v) in self.stream and v != avoid]
        parent: dict[str, tuple[str, tuple[str, str]] | None] = {v: None for v in start}
        incoming = {v: self.unit[s] for v in start}
        queue = deque(start)
        while queue:
            v = queue.popleft()
            if parent[v] is not None and self.node[v] >= incoming[v] - EPS:
                return self._apply_chain(s, w, v, parent)
            seen: set[tuple[str, int]] = set()
            for s2, w2 in self.at_switch[v]:
                group = (s2, self.cls_of[w2])  # same unit, same switches: the first one speaks
                if group in seen:
                    continue
                seen.add(group)
                if self.node[v] + self.unit[s2] < incoming[v] - EPS:
                    continue  # moving it away would not free enough
                rep2 = self.paths.classes[group[1]].rep
                for v2 in self.paths.switches_between(rep2, s2):
                    if v2 not in parent and v2 != avoid and (s2, v2) in self.stream:
                        parent[v2] = (v, (s2, w2))
                        incoming[v2] = self.unit[s2]
                        queue.append(v2)
        return False

    def _apply_chain(self, s: str, w: str, end: str,
                     parent: dict[str, tuple[str, tuple[str, str]] | None]) -> bool:
        moves = []
        v = end
        while parent[v] is not None:
            prev, pair = parent[v]
            moves.append((pair, v))
            v = prev
        done: list[tuple[Flow, tuple[str, str]]] = []  # (old flow, pair) to undo
        for (s2, w2), target in moves:
            old = self.remove(s2, w2)
            if not self.aggregate(s2, w2, target):
                self._restore(old)
                break
            done.append((old, (s2, w2)))
        else:
            if self.aggregate(s, w, v):
                return True
        for old, pair in reversed(done):
            self.remove(*pair)
            self._restore(old)
        return False

    def _restore(self, flow: Flow) -> None:
        """Put back a flow removed by `remove` (its stream path, if reopened, is re-chosen)."""
        s, w, v = flow.ps, flow.worker, flow.aggregate_at
        need = self.unit[s]
        if v is None:
            self.node[s] -= need
        else:
            if (s, v) not in self.stream:
                weights = self.guide.stream.get((s, v), {}) if self.guide else {}
                sp = self._choose(self.paths.get(v, s), weights, -math.inf) or \
                    self.paths.get(v, s)[0]
                self.stream[(s, v)] = sp
                self.node[s] -= need
                self._take_path(sp, need)
            self.node[v] -= need
            self.fan[(s, v)] += 1
            self.at_switch[v][(s, w)] = None
        self._take_path(flow.path, need)
        self.flow[(s, w)] = flow

    # -- the whole packing -------------------------------------------------------------------
    def run(self, rng: random.Random | None = None) -> bool:
        """LP-guided packing (steps 1-3 above).  With `rng`, a draw: the LP's counts are
        rounded randomly (floor(n + U[0, 1)), so in expectation n) and the streams' order is
        jittered.  Draws are the cheap way to other integral plans near one LP solution: on
        fattree:6 at a shifted split a third to all of 8 draws pack where the rounded LP
        does not, for a few milliseconds each (a perturbed LP solve costs ten times more)."""
        paths, guide = self.paths, self.guide
        if guide is not None:
            per_stream: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
            for (s, ci, v), n in guide.n.items():
                per_stream[(s, v)].append((n, ci))
            weight = {k: sum(n for n, _ in per_stream[k]) * (1 + 0.3 * rng.random() if rng
                                                            else 1.0) for k in per_stream}
            for s, v in sorted(per_stream, key=lambda k: -weight[k]):
                for n, ci in sorted(per_stream[(s, v)], reverse=True):
                    want = math.floor(n + (rng.random() if rng else 0.5))
                    for w in paths.classes[ci].members:
                        if want <= 0:
                            break
                        if (s, w) not in self.flow:
                            if not self.aggregate(s, w, v):
                                break
                            want -= 1
        for s in sorted(self.pss, key=lambda s: self.node[s]):
            for w in self.workers:
                if (s, w) not in self.flow and not self.place(s, w):
                    return False
        return True

    def run_fanin(self, rng: random.Random | None = None) -> bool:
        """Largest fan-in first: repeatedly open the stream (s, v) that can take the most
        still-unplaced workers of s (limited by v's room), filling it with workers of the
        classes that have the fewest unplaced members for s (so that whole classes stay
        together for the small streams at their own switch later); ties go to the LP's
        choice.  Then the leftovers as in `run`."""
        paths = self.paths
        pss, classes = self.pss, paths.classes
        cand: dict[tuple[str, str], list[int]] = defaultdict(list)  # (s, v) -> classes
        where: dict[tuple[str, int], list[str]] = {}  # (s, class) -> candidate switches
        for s in pss:
            for ci, cls in enumerate(classes):
                where[(s, ci)] = paths.switches_between(cls.rep, s)
                for v in where[(s, ci)]:
                    cand[(s, v)].append(ci)
        left = {(s, ci): list(cls.members) for s in pss for ci, cls in enumerate(classes)}
        count = {key: sum(len(left[(key[0], ci)]) for ci in cis) for key, cis in cand.items()}
        uncovered = {s: len(self.workers) for s in pss}
        weight: dict[tuple[str, str], float] = defaultdict(float)
        if self.guide is not None:
            for (s, _, v), n in self.guide.n.items():
                weight[(s, v)] += n

        def potential(s: str, v: str) -> int:
            unit = self.unit[s]
            slots = math.floor(self.node[v] / unit + 1e-9) if unit > EPS else 10**9
            return min(slots, count[(s, v)], MAX_FAN_IN)

        pots = {key: potential(*key) for key in cand}
        by_switch: dict[str, list[tuple[str, str]]] = defaultdict(list)
        buckets: dict[int, set[tuple[str, str]]] = defaultdict(set)  # potential -> streams
        contest: dict[str, int] = defaultdict(int)
        for key, k in pots.items():
            by_switch[key[1]].append(key)
            buckets[k].add(key)
            contest[key[1]] += k >= 2
        while True:
            top = max((k for k, keys in buckets.items() if keys and k >= 2), default=None)
            if top is None:
                break
            pressure = {s: uncovered[s] / max(self.node[s] / self.unit[s], 0.5)
                        if self.unit[s] > EPS else 0.0 for s in pss}

            def rank(key: tuple[str, str], pressure: dict[str, float] = pressure) -> tuple:
                noise = 1 + 0.3 * rng.random() if rng else 1.0
                return (pressure[key[0]] * noise, -contest[key[1]], weight[key], key)

            s, v = max(sorted(buckets[top]), key=rank)  # sorted: no hash order
            placed, touched = 0, set(by_switch[v])
            for ci in sorted(cand[(s, v)], key=lambda c: len(left[(s, c)]) or 10**9):
                for w in list(left[(s, ci)]):
                    if placed >= top:
                        break
                    if self.aggregate(s, w, v):
                        left[(s, ci)].remove(w)
                        placed += 1
                        uncovered[s] -= 1
                        for u in where[(s, ci)]:
                            count[(s, u)] -= 1
                            touched.add((s, u))
            if placed == 0:
                cand[(s, v)] = []  # cannot open here (PS or links full)
                count[(s, v)] = 0
            for key in touched:  # only these potentials can have changed
                k = 0 if key in self.stream else potential(*key)
                if k != pots[key]:
                    buckets[pots[key]].discard(key)
                    buckets[k].add(key)
                    contest[key[1]] += (k >= 2) - (pots[key] >= 2)
                    pots[key] = k
        for s in sorted(self.pss, key=lambda s: self.node[s]):
            for w in self.workers:
                if (s, w) not in self.flow and not self.place(s, w):
                    return False
        return True

    def plan(self, scheme: str) -> Plan:
        order = {s: i for i, s in enumerate(self.pss)}
        windex = {w: i for i, w in enumerate(self.workers)}
        flows = sorted(self.flow.values(), key=lambda fl: (order[fl.ps], windex[fl.worker]))
        stream_paths = {f"{v}->{s}": list(p) for (s, v), p in self.stream.items()}
        plan = Plan(scheme, self.topo, dict(self.split), flows,
                    meta={"stream_paths": stream_paths})
        plan.rate = plan.evaluate().rate
        return plan


def pack(topo: Topology, paths: PathSets, split: dict[str, float], f: float,
         guide: CountSolution | None, scheme: str, restarts: int = RESTARTS,
         draws: int = DRAWS) -> Plan | None:
    """A plan whose loads fit at rate f, or None if no packing finds one: the LP-guided
    packing, `draws` randomized ones (`Packer.run`), then largest-fan-in-first and
    `restarts` of it with seeded random tie-breaks between PSs (each takes milliseconds)."""
    rng = random.Random(0)
    for i in range(draws + 1 if guide is not None else 1):
        packer = Packer(topo, paths, split, f, guide)
        if packer.run(rng if i else None):
            return packer.plan(scheme)
    for i in range(restarts + 1):
        packer = Packer(topo, paths, split, f, guide)
        if packer.run_fanin(rng if i else None):
            return packer.plan(scheme)
    return None


def best_pack(lp: CountLP, lo: float, top: float, scheme: str, restarts: int = RESTARTS,
              draws: int = DRAWS, stride: int = 5, gap: float = 4e-3,
              perturb: int = PERTURB, thorough: bool = False) -> Plan | None:
    """The best plan packed for the LP's current split at a target rate in [lo, top] (top:
    the largest rate where the count LP is feasible).  Targets, each at least `gap` below
    the previous (a packing's true rate is often above its target, so closer targets rarely
    add a plan; with an equal split they are breakpoints, a plan's rate always is one): the
    top, with the full effort (`restarts`, `draws`), and when it fails `perturb` more LP
    solutions there (random stream costs; only on LPs up to PERTURB_MAX_VARS columns);
    then every `stride`-th target down to the first that packs, and a bisection between it
    and the last failure (a greedy's success is not monotone in f: bisecting the whole range
    missed fig1-sized leaf-spines' best plans).  Below the top the effort is light unless
    `thorough`.  Each packing is guided by the LP at its own target (a warm re-solve:
    guidance from a higher rate packs worse).  Plans are scored by their true rate, or with
    `thorough` by the rate their refined split gives (what the split search goes on with)."""
    topo, paths, split = lp.topo, lp.paths, lp.split
    best: Plan | None = None
    score = (lambda p: refined(p).rate) if thorough else (lambda p: p.rate)

    def attempt(f: float, top: bool = False) -> bool:
        nonlocal best
        sol = lp.feasible_at(f)
        effort = (restarts, draws) if top or thorough else (LIGHT_RESTARTS, LIGHT_DRAWS)
        plan = pack(topo, paths, split, f, sol, scheme, *effort) if sol is not None else None
        if plan is not None and (best is None or score(plan) > score(best)):
            best = plan
        return plan is not None

    if lp.equal:
        raw = sorted(lp.breakpoints(lo, top), reverse=True)
    else:
        raw = [top * (1 - gap) ** i for i in range(int(math.log(max(lo, 1e-9) / top)
                                                       / math.log(1 - gap)) + 1)]
    cands: list[float] = []
    for f in raw:
        if not cands or f <= cands[-1] * (1 - gap):
            cands.append(f)
    if cands and not attempt(cands[0], top=True):
        rng = np.random.default_rng(0)  # the top target again, from other LP vertices
        for _ in range((3 * perturb if thorough else perturb)
                       if lp.size["vars"] <= PERTURB_MAX_VARS else 0):
            sol = lp.perturbed_at(cands[0], rng)
            plan = pack(topo, paths, split, cands[0], sol, scheme, 0) if sol else None
            if plan is not None:
                return plan
    elif cands:
        return best
    if len(cands) < 2:
        return best
    failed, i = 0, stride  # down in strides to the first success, then bisect above it
    while i < len(cands) - 1 and not attempt(cands[i]):
        failed, i = i, i + stride
    if i >= len(cands) - 1 and not attempt(cands[-1]):
        return best
    a, b = failed + 1, min(i, len(cands) - 1) - 1
    while a <= b:
        mid = (a + b) // 2
        if attempt(cands[mid]):
            b = mid - 1
        else:
            a = mid + 1
    return best


def pack_search(topo: Topology, paths: PathSets, split: dict[str, float], hi: float,
                scheme: str, steps: int = 12) -> Plan | None:
    """Without an LP (instances too large for one): bisection on the target rate in
    (0, hi] with largest-fan-in-first packing alone; the best plan by its true rate."""
    lo, best = 0.0, None
    for _ in range(steps):
        mid = (lo + hi) / 2
        packer = Packer(topo, paths, split, mid, None)
        if packer.run_fanin():
            plan = packer.plan(scheme)
            if best is None or plan.rate > best.rate:
                best = plan
            lo = max(mid, plan.rate)
        else:
            hi = mid
        if hi <= lo * (1 + 1e-3):
            break
    return best
