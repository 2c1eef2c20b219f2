"""The count LP: LP-InArt per worker class at a fixed split and a target rate, with the
integer caps that every plan reaching that rate must respect.

Why: LP-InArt in rate variables (lp_inart.py) charges a PS only the fractional stream
Z[s,v] <= g_s, so it spreads aggregation thinly over many switches; on fattree:6 its optimum
sits ~25% above every integral plan.  With the split x fixed and a target rate f, every load
of a plan is an integer count of flows times a known rate u_s = f x_s, so these hold:

    fan-in   a stream (s, v) of n workers puts n u_s on v:   n <= K(s,v) = floor(C(v) / u_s)
             hence  sum_c n[s,c,v] <= min(K, candidates) z[s,v],  n[s,c,v] <= |c| z[s,v]
    PS       its direct flows plus its streams, u_s each:  count <= floor(B(s) / u_s)
    switch, link   sum_s u_s count_s <= capacity; with one share u for every PS (equal
             split) the integer count itself: count <= floor(capacity / u)

Variables are counts (n: workers of class c aggregated at v for s; d: direct on a path;
z in [0, 1]: the stream (s, v) is open) and routed flows in units of f.  A plan with split x
and rate F >= f satisfies every row at f, because the caps only grow as f falls.  So an
infeasible LP at f proves that no plan with split x reaches f; bisection on f gives
`bound(x)`, the upper bound `solve` reports (always for the plan's own split).  The same
solution at the largest feasible f guides the integral packing (pack.py).

Workers with one uplink to the same switch are interchangeable (paths.WorkerClass): one count
per class instead of one binary per worker, which is what keeps fattree:16 tractable.  Their
uplinks carry f whatever the plan does, so they leave the LP as the bound f <= uplink.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from control_plane.model.plan import MAX_FAN_IN
from control_plane.model.topology import Topology
from control_plane.solver.lp_model import LPModel, Solution
from control_plane.solver.paths import PathSets, arcs

EPS = 1e-9
BISECT_REL = 1e-3  # bound precision (unequal splits): bisection stops at hi/lo - 1 below this
GALLOP_REL = 5e-3  # bound precision above a known plan's rate (`bound_from`)


def floor_cap(capacity: float, unit: float, limit: float) -> float:
    """How many flows of rate `unit` fit in `capacity` (at most `limit`; all if unit is 0)."""
    if unit <= EPS:
        return float(limit)
    return float(min(limit, math.floor(max(capacity, 0.0) / unit * (1 + 1e-9) + 1e-9)))


@dataclass
class CountSolution:
    """The count LP's solution at one rate: fractional counts per decision."""

    rate: float
    n: dict[tuple[str, int, str], float]  # (s, class index, v) -> workers aggregated at v
    d: dict[tuple[str, int], dict[tuple[str, ...], float]]  # (s, class) -> path -> workers
    z: dict[tuple[str, str], float]  # (s, v) -> stream fraction
    segment: dict[tuple[str, int, str], dict[tuple[str, ...], float]]  # (s, class, v) -> path
    stream: dict[tuple[str, str], dict[tuple[str, ...], float]]  # (s, v) -> path -> fraction


@dataclass
class Bound:
    """Bisection result: no plan with the split reaches `rate`; `solution` is the LP at the
    largest rate found feasible (None if none was)."""

    rate: float
    solution: CountSolution | None
    solves: int
    seconds: float
    size: dict[str, int] = field(default_factory=dict)


class CountLP:
    """The count LP, built once per topology and path sets.  `use_split(x)` and
    `feasible_at(f)` only change row bounds, column bounds and the fan-in coefficients, so
    HiGHS re-solves warm (dual simplex) across rates and splits.

    Variables are weighted by the split (a = x_s n, ..., "load per unit of f"), which puts
    the split into bounds alone: demand rows sum_v a + sum_p delta = x_s |c|, streams
    zeta <= x_s.  Only the fan-in cap K(s, v) stays a coefficient.
    """

    def __init__(self, topo: Topology, paths: PathSets, class_rows: bool = True) -> None:
        """`class_rows`: also n[s,c,v] <= |c| z[s,v] per class (valid, tighter when a stream
        can gather several classes).  On fattree:6/8 they changed no bound but made every
        solve 3-4x slower, so `solve` keeps them for small instances only."""
        t0 = time.perf_counter()
        self.topo, self.paths = topo, paths
        self.pss = topo.pss  # Topology sorts on every access
        self.flows_max = len(topo.workers) + len(topo.switches)
        self.classes = paths.classes
        self.model = m = LPModel()
        S = topo.pss
        link_terms: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
        switch_terms: dict[str, list[tuple[int, float]]] = defaultdict(list)
        ps_terms: dict[str, list[tuple[int, float]]] = defaultdict(list)
        self.d_cols: dict[tuple[str, int], list[tuple[tuple[str, ...], int]]] = {}
        self.n_cols: dict[tuple[str, int, str], int] = {}
        self.z_cols: dict[tuple[str, str], int] = {}
        self.candidates: dict[tuple[str, str], int] = defaultdict(int)  # workers that may use v
        self.demand_rows: dict[tuple[str, int], int] = {}
        # segment routes (class, v, the paths `segments` allows) are shared by the PSs for
        # which the same paths are allowed: all of them over minimum-hop paths
        Segment = tuple[int, str, tuple[tuple[str, ...], ...]]
        by_segment: dict[Segment, list[int]] = defaultdict(list)
        self.segment_of: dict[tuple[str, int, str], Segment] = {}
        by_stream: dict[tuple[str, str], list[int]] = defaultdict(list)

        def charge(ci: int, path: tuple[str, ...], col: int) -> None:
            """Add a routed flow to its links; a single-homed class's uplink is not a row."""
            hops = arcs(path)
            for arc in hops[1:] if self.classes[ci].single else hops:
                link_terms[arc].append((col, 1.0))

        for s in S:
            for ci, cls in enumerate(self.classes):
                demand = []
                self.d_cols[(s, ci)] = []
                for p in paths.get(cls.rep, s):
                    col = m.var(cost=-1.0)  # PS load, minimised
                    self.d_cols[(s, ci)].append((p, col))
                    demand.append((col, 1.0))
                    ps_terms[s].append((col, 1.0))
                    charge(ci, p, col)
                for v in paths.switches_between(cls.rep, s):
                    col = m.var()
                    self.n_cols[(s, ci, v)] = col
                    demand.append((col, 1.0))
                    switch_terms[v].append((col, 1.0))
                    key = (ci, v, paths.segments(cls.rep, v, s))
                    by_segment[key].append(col)
                    self.segment_of[(s, ci, v)] = key
                    by_stream[(s, v)].append(col)
                    self.candidates[(s, v)] += len(cls.members)
                self.demand_rows[(s, ci)] = m.row(demand, 0.0, 0.0)
        self.stream_cols: dict[tuple[str, str], list[tuple[tuple[str, ...], int]]] = {}
        for s, v in by_stream:
            z = self.z_cols[(s, v)] = m.var(cost=-1.0)
            ps_terms[s].append((z, 1.0))
            route = []
            for q in paths.get(v, s):
                col = m.var()
                route.append((q, col))
                for arc in arcs(q):
                    link_terms[arc].append((col, 1.0))
            self.stream_cols[(s, v)] = route
            m.row([(c, 1.0) for _, c in route] + [(z, -1.0)], 0.0, 0.0)
        self.fan_rows = {key: m.row([(c, 1.0) for c in cols] + [(self.z_cols[key], -1.0)],
                                    upper=0.0) for key, cols in by_stream.items()}
        for (s, ci, v), col in self.n_cols.items() if class_rows else ():
            size = len(self.classes[ci].members)
            if self.candidates[(s, v)] > size:  # else the fan-in row already implies it
                m.row([(col, 1.0), (self.z_cols[(s, v)], -float(size))], upper=0.0)
        self.seg_cols: dict[Segment, list[tuple[tuple[str, ...], int]]] = {}
        for key, cols in by_segment.items():
            route = []
            for p in key[2]:
                col = m.var()
                route.append((p, col))
                charge(key[0], p, col)
            self.seg_cols[key] = route
            m.row([(c, 1.0) for _, c in route] + [(c, -1.0) for c in cols], 0.0, 0.0)
        self.switch_rows = {v: m.row(t, upper=0.0) for v, t in switch_terms.items()}
        self.ps_rows = {s: m.row(t, upper=0.0) for s, t in ps_terms.items()}
        self.link_rows = {a: m.row(t, upper=0.0) for a, t in link_terms.items()}
        self.uplink = min((c.uplink for c in self.classes if c.single), default=math.inf)
        m.load(method="simplex")
        self._fan: list[float] = []
        self._basis = None  # the last optimal basis at the current fan-in coefficients
        self._perturbed = False
        self.split: dict[str, float] = {}
        self.equal = False
        self.solved: dict[float, CountSolution | None] = {}  # by rate, for packing to reuse
        self.build_seconds = time.perf_counter() - t0
        self.size = {"vars": m.num_vars, "rows": m.num_rows, "nonzeros": len(m.coo_val),
                     "classes": len(self.classes)}

    def use_split(self, split: dict[str, float]) -> None:
        """Make every later solve about plans with this split."""
        if split == self.split:
            return
        self.split = dict(split)
        shares = [split[s] for s in self.pss]
        self.equal = max(shares) - min(shares) <= 1e-12
        self.solved = {}
        rows = list(self.demand_rows.values())
        rhs = np.asarray([split[s] * len(self.classes[ci].members)
                          for s, ci in self.demand_rows])
        self.model.set_row_bounds(np.asarray(rows), rhs, rhs)
        cols = np.asarray(list(self.z_cols.values()), dtype=np.int32)
        upper = np.asarray([split[s] for s, _ in self.z_cols])
        self.model.highs.changeColsBounds(len(cols), cols, np.zeros(len(cols)), upper)

    def _caps(self, f: float) -> None:
        """Set every rate-dependent bound and fan-in coefficient for target rate f."""
        topo, split, m = self.topo, self.split, self.model
        share = split[self.pss[0]]

        def cap(spare: float) -> float:
            """A switch or link row's bound: integer flows of one share when all are equal."""
            spare = max(spare, 0.0)
            return share * floor_cap(spare, f * share, math.inf) if self.equal and \
                share > EPS else spare / f

        rows, upper = [], []
        for v, row in self.switch_rows.items():
            rows.append(row)
            upper.append(cap(topo.nodes[v].spare))
        for s, row in self.ps_rows.items():
            rows.append(row)
            upper.append(split[s] * floor_cap(topo.nodes[s].spare, f * split[s],
                                              self.flows_max))
        for arc, row in self.link_rows.items():
            rows.append(row)
            upper.append(cap(topo.links[arc].spare))
        m.set_row_bounds(np.asarray(rows), np.full(len(rows), -np.inf), np.asarray(upper))
        fan = [floor_cap(topo.nodes[v].spare, f * split[s],
                         min(self.candidates[(s, v)], MAX_FAN_IN))
               for s, v in self.fan_rows]
        if fan != self._fan:
            # HiGHS's factorization is stale after a changed coefficient: drop it; `_run`
            # hands the last optimal basis back, to be refactored (few iterations from it)
            m.highs.clearSolver()
            for (key, row), k in zip(self.fan_rows.items(), fan, strict=True):
                m.highs.changeCoeff(row, self.z_cols[key], -k)
            self._fan = fan

    def feasible_at(self, f: float) -> CountSolution | None:
        """The LP's solution at rate f for the current split, or None: then no plan with
        this split reaches f."""
        if f > self.uplink * (1 + EPS):
            return None
        if f not in self.solved:
            self._costs(None)
            self._caps(f)
            sol = self._run()
            self.solved[f] = None if sol is None else self._extract(f, sol.values)
        return self.solved[f]

    def _run(self) -> Solution | None:
        """Solve warm.  HiGHS drops its basis when it proves an LP infeasible, and the next
        solve would start cold (500+ iterations on fattree:6 instead of 20-50): so the last
        optimal basis is kept and handed back whenever the fan-in coefficients are those it
        was found for (bounds and costs may differ: dual or primal simplex repairs that)."""
        h = self.model.highs
        if self._basis is not None and not h.getBasis().valid:
            h.setBasis(self._basis)
        sol = self.model.resolve(infeasible_ok=True)
        if sol is not None:
            self._basis = h.getBasis()
        return sol

    def perturbed_at(self, f: float, rng: np.random.Generator) -> CountSolution | None:
        """Another optimal-ish vertex at rate f: stream costs drawn in [1, 1.5] and small
        random costs on aggregation, so rounding sees a different fractional structure."""
        if self.feasible_at(f) is None:
            return None
        self._costs(rng)
        sol = self._run()
        return None if sol is None else self._extract(f, sol.values)

    def _costs(self, rng: np.random.Generator | None) -> None:
        """Base costs (PS load) or randomly perturbed ones."""
        if rng is None and not self._perturbed:
            return
        h = self.model.highs
        z = np.asarray(list(self.z_cols.values()), dtype=np.int32)
        n = np.asarray(list(self.n_cols.values()), dtype=np.int32)
        if rng is None:
            h.changeColsCost(len(z), z, -np.ones(len(z)))
            h.changeColsCost(len(n), n, np.zeros(len(n)))
        else:
            h.changeColsCost(len(z), z, -1.0 - 0.5 * rng.random(len(z)))
            h.changeColsCost(len(n), n, 0.05 * rng.random(len(n)))
        self._perturbed = rng is not None

    def breakpoints(self, lo: float, hi: float, switches_only: bool = False) -> list[float]:
        """Rates in (lo, hi] at which some integer cap changes: capacity / (x_s N).  With an
        equal split every row is an integer cap, so feasibility can change only there; the
        fan-in coefficients change only at the switches' ones."""
        topo, out = self.topo, set()
        lo = max(lo, hi / 64)

        def add(capacity: float, share: float) -> None:
            if share <= EPS or capacity <= EPS:
                return
            for n in range(max(1, math.ceil(capacity / (share * hi) - 1e-9)),
                           math.floor(capacity / (share * lo) + 1e-9) + 1):
                rate = capacity / (share * n)
                if lo < rate <= hi * (1 + 1e-12):
                    out.add(rate)

        for x in set(self.split.values()):
            for v in self.switch_rows:
                add(topo.nodes[v].spare, x)
        if switches_only:
            return sorted(out)
        for s, x in self.split.items():
            add(topo.nodes[s].spare, x)
        if self.equal:
            for arc in self.link_rows:
                add(topo.links[arc].spare, self.split[self.pss[0]])
        if lo < self.uplink <= hi:
            out.add(self.uplink)
        return sorted(out)

    def _last_feasible(self, cands: list[float]) -> tuple[int, CountSolution | None]:
        """Binary search: index of the largest feasible rate in `cands` (-1 if none)."""
        a, b, found, best = 0, len(cands) - 1, -1, None
        while a <= b:  # the LP's feasibility falls monotonically with f
            mid = (a + b) // 2
            sol = self.feasible_at(cands[mid])
            if sol is None:
                b = mid - 1
            else:
                a, found, best = mid + 1, mid, sol
        return found, best

    def bound(self, lo: float, hi: float, rel: float = BISECT_REL) -> Bound:
        """The largest rate at which the LP is feasible for the current split, between `lo`
        (a rate some plan with the split reaches, or 0) and `hi` (a rate no plan reaches,
        e.g. Eq. 2's optimum).  First over the switch breakpoints (the fan-in coefficients
        are constant between two of them, so the search after that re-solves warm), then
        inside the interval found: over the remaining breakpoints with an equal split (exact:
        caps are constant on (breakpoint, next breakpoint]), else by bisection to `rel`, the
        bound then being the smallest rate found infeasible."""
        t0 = time.perf_counter()
        before = len(self.solved)
        hi = min(hi, self.uplink)
        start = max(lo, hi / 4)  # the bound is rarely below a quarter of Eq. 2's
        outer = self.breakpoints(start, hi, switches_only=True)
        i, best = self._last_feasible(outer)
        if i < 0 and start > lo:
            below = self.breakpoints(lo, start, switches_only=True)
            i, best = self._last_feasible(below)
            outer = below + outer
        low = outer[i] if i >= 0 else 0.0
        high = outer[i + 1] if i + 1 < len(outer) else hi
        if self.equal:
            inner = [c for c in self.breakpoints(max(low, lo), high)
                     if c < high or i + 1 == len(outer)]
            j, sol = self._last_feasible(inner)
            best = sol if j >= 0 else best
            if best is not None:
                top = best.rate
            else:  # nothing feasible: the smallest rate tested is infeasible
                top = min([high, *(f for f, v in self.solved.items() if v is None)])
        else:
            while (best is None or high > low * (1 + rel)) and high > EPS and \
                    len(self.solved) - before < 60:
                probe = (low + high) / 2 if low > 0 else high / 2
                sol = self.feasible_at(probe)
                if sol is None:
                    high = probe
                else:
                    best, low = sol, probe
            top = high
        return Bound(top, best, len(self.solved) - before, time.perf_counter() - t0,
                     dict(self.size, build_ms=int(self.build_seconds * 1000)))

    def bound_from(self, rate: float, hi: float, rel: float = GALLOP_REL) -> Bound:
        """The bound for the current split when a plan with it reaches `rate`: probe
        rate (1 + rel), rate (1 + 2 rel), rate (1 + 4 rel), ... until the LP is infeasible
        (or `hi`), then bisect to `rel`; the bound is the smallest rate found infeasible.
        A plan near its bound (what the split search carries) costs one or two solves
        instead of a breakpoint search, at the price of a bound up to `rel` looser."""
        t0 = time.perf_counter()
        before = len(self.solved)
        low, high, step = rate, min(hi, self.uplink), rel
        best = None
        while rate * (1 + step) < high:
            probe = rate * (1 + step)
            sol = self.feasible_at(probe)
            if sol is None:
                high = probe
                break
            low, best, step = probe, sol, step * 2
        while high > low * (1 + rel) and len(self.solved) - before < 60:
            probe = (low + high) / 2
            sol = self.feasible_at(probe)
            if sol is None:
                high = probe
            else:
                low, best = probe, sol
        return Bound(max(high, rate), best, len(self.solved) - before,
                     time.perf_counter() - t0,
                     dict(self.size, build_ms=int(self.build_seconds * 1000)))

    def _extract(self, f: float, x: np.ndarray) -> CountSolution:
        """Counts back from split-weighted values (a PS with no share has nothing to count)."""
        share = self.split

        def dist(route: list[tuple[tuple[str, ...], int]]) -> dict[tuple[str, ...], float]:
            return {p: float(x[c]) for p, c in route if x[c] > 1e-12}

        segments = {k: dist(r) for k, r in self.seg_cols.items()}
        return CountSolution(
            rate=f,
            n={k: float(x[c]) / share[k[0]] for k, c in self.n_cols.items()
               if share[k[0]] > EPS and x[c] > 1e-9 * share[k[0]]},
            d={k: {p: v / share[k[0]] for p, v in dist(r).items()} if share[k[0]] > EPS else {}
               for k, r in self.d_cols.items()},
            z={k: float(x[c]) / share[k[0]] for k, c in self.z_cols.items()
               if share[k[0]] > EPS and x[c] > 1e-9 * share[k[0]]},
            segment={k: segments[group] for k, group in self.segment_of.items()},
            stream={k: dist(r) for k, r in self.stream_cols.items()},
        )
