"""LP-InArt (InArt paper Eq. 5) in rate variables, with a fixed split or a free one (joint).

Eq. 5 multiplies f, x_s and the y/q variables; writing every decision as the traffic rate it
carries (g_s = f x_s, A = g_s y_v^{s,w}, ...) makes every constraint linear:

    D[s,w,p]  direct traffic w -> s on path p          sum_p D + sum_v A[s,w,v] = g_s
    A[s,w,v]  traffic of w for s aggregated at v       A[s,w,v] <= Z[s,v] <= g_s
    Z[s,v]    the aggregated stream v -> s             sum_p U[s,v,p] = Z[s,v]
    switch v: sum_{s,w} A[s,w,v] <= C(v) - c(v)
    PS s:     sum_{w,p} D[s,w,p] + sum_v Z[s,v] <= B(s) - b(s)
    link e:   every D, T, U whose path uses e     <= B(e) - b(e)

Formulations:
- ``naive``: the straightforward path LP, the reference of `inart bench solver`: every switch
  is a candidate for every (s, w), a variable per (s, w, v, path), HiGHS' dual simplex;
- ``path``: the same per-(s, w, v, path) variables over our candidate switches;
- ``compact`` (default): w -> v segments of all PSs share one path variable T[w,v,p] with
  sum_p T[w,v,p] = sum_s A[s,w,v], since links only see the total; this removes a factor |S|
  of path variables and rows.  ``path`` and ``compact`` have the same optimum.
Candidate aggregation switches for (s, w) are the switches on any minimum-hop w -> s path
(restricting them to the k chosen paths cost 12% of the fattree:6 bound, so we keep all).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field

from control_plane.model.topology import Topology
from control_plane.solver.lp_model import LPModel
from control_plane.solver.paths import PathSets, arcs

FORMULATIONS = ("compact", "path", "naive")


@dataclass
class LPResult:
    """Fractional optimum of LP-InArt, as rounding probabilities per decision."""

    rate: float
    split: dict[str, float]
    direct: dict[tuple[str, str], float]  # (s, w) -> share sent directly (sums with agg to 1)
    aggregate: dict[tuple[str, str], dict[str, float]]  # (s, w) -> {v: share}
    direct_paths: dict[tuple[str, str], dict[tuple[str, ...], float]]
    segment_paths: dict[tuple[str, str, str], dict[tuple[str, ...], float]]  # (s, w, v)
    stream_paths: dict[tuple[str, str], dict[tuple[str, ...], float]]  # (v, s)
    seconds: float
    size: dict[str, int] = field(default_factory=dict)


def solve_lp(topo: Topology, paths: PathSets, split: dict[str, float] | None = None,
             formulation: str = "compact") -> LPResult:
    """Solve LP-InArt once; ``split=None`` lets the LP choose x_s too (the joint LP)."""
    return InArtLP(topo, paths, joint=split is None, formulation=formulation).solve(split)


class InArtLP:
    """LP-InArt built once; `solve(split)` re-solves warm-started for another split."""

    def __init__(self, topo: Topology, paths: PathSets, joint: bool = False,
                 formulation: str = "compact") -> None:
        if formulation not in FORMULATIONS:
            raise ValueError(f"formulation '{formulation}': expected one of {FORMULATIONS}")
        t0 = time.perf_counter()
        if formulation == "naive":
            paths = PathSets(topo, paths.k, candidates="any", routes=paths.routes)
        self.method = "simplex" if formulation == "naive" else "ipm"
        self.topo, self.paths, self.joint = topo, paths, joint
        self.model = m = LPModel()
        S = topo.pss
        self.f = f = m.var(cost=1.0)
        self.g = g = {s: m.var() for s in S}
        self.split_rows: dict[str, int] = {}
        if joint:
            m.row([(f, 1.0)] + [(g[s], -1.0) for s in S], 0.0, 0.0)
        else:
            for s in S:
                self.split_rows[s] = m.row([(g[s], 1.0), (f, -1.0 / len(S))], 0.0, 0.0)
        self._build(formulation)
        self.build_seconds = time.perf_counter() - t0
        self.loaded = False

    def _build(self, formulation: str) -> None:
        topo, paths, m, g = self.topo, self.paths, self.model, self.g
        W, S = topo.workers, topo.pss

        link_terms: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
        switch_terms: dict[str, list[tuple[int, float]]] = defaultdict(list)
        ps_terms: dict[str, list[tuple[int, float]]] = defaultdict(list)
        D: dict[tuple[str, str], list[tuple[tuple[str, ...], int]]] = {}
        A: dict[tuple[str, str, str], int] = {}
        Z: dict[tuple[str, str], int] = {}
        for s in S:
            for w in W:
                demand = [(g[s], -1.0)]
                D[(s, w)] = []
                for p in paths.get(w, s):
                    col = m.var()
                    D[(s, w)].append((p, col))
                    demand.append((col, 1.0))
                    ps_terms[s].append((col, 1.0))
                    for arc in arcs(p):
                        link_terms[arc].append((col, 1.0))
                for v in paths.switches_between(w, s):
                    if (s, v) not in Z:
                        Z[(s, v)] = m.var()
                        m.row([(Z[(s, v)], 1.0), (g[s], -1.0)], upper=0.0)
                    col = m.var()
                    A[(s, w, v)] = col
                    demand.append((col, 1.0))
                    switch_terms[v].append((col, 1.0))
                    m.row([(col, 1.0), (Z[(s, v)], -1.0)], upper=0.0)
                m.row(demand, 0.0, 0.0)

        # fan-in cuts (see solve): sum_w A[s,w,v] <= n Z[s,v], n = W until a rate is given
        fan: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
        for (s, _, v), col in A.items():
            fan[(s, v)].append((col, 1.0))
        self.cut_rows = {key: m.row(terms + [(Z[key], -float(len(W)))], upper=0.0)
                         for key, terms in fan.items()}
        self.Z = Z
        def route(options: tuple[tuple[str, ...], ...], terms: list[tuple[int, float]]
                  ) -> list[tuple[tuple[str, ...], int]]:
            """One variable per path, charged to its links and added to ``terms``."""
            chosen = []
            for p in options:
                col = m.var()
                chosen.append((p, col))
                terms.append((col, 1.0))
                for arc in arcs(p):
                    link_terms[arc].append((col, 1.0))
            return chosen

        # segment routes by (w, v, the paths `segments` allows for s): compact shares them
        # among the PSs with the same paths (all of them over minimum-hop paths)
        T: dict[tuple, list[tuple[tuple[str, ...], int]]] = {}
        self.segment_of: dict[tuple[str, str, str], tuple] = {}
        if formulation == "compact":
            by_segment: dict[tuple, list[int]] = defaultdict(list)
            for (s, w, v), col in A.items():
                key = self.segment_of[(s, w, v)] = (w, v, paths.segments(w, v, s))
                by_segment[key].append(col)
            for key, cols in by_segment.items():
                terms = [(c, -1.0) for c in cols]
                T[key] = route(key[2], terms)
                m.row(terms, 0.0, 0.0)
        else:
            for (s, w, v), acol in A.items():
                terms = [(acol, -1.0)]
                T[(s, w, v)] = route(paths.segments(w, v, s), terms)
                self.segment_of[(s, w, v)] = (s, w, v)
                m.row(terms, 0.0, 0.0)

        U: dict[tuple[str, str], list[tuple[tuple[str, ...], int]]] = {}
        for (s, v), zcol in Z.items():
            ps_terms[s].append((zcol, 1.0))
            terms = [(zcol, -1.0)]
            U[(v, s)] = route(paths.get(v, s), terms)
            m.row(terms, 0.0, 0.0)

        for v, terms in switch_terms.items():
            m.row(terms, upper=max(topo.nodes[v].spare, 0.0))
        for s, terms in ps_terms.items():
            m.row(terms, upper=max(topo.nodes[s].spare, 0.0))
        for arc, terms in link_terms.items():
            m.row(terms, upper=max(topo.links[arc].spare, 0.0))

        self.D, self.A, self.T, self.U = D, A, T, U

    def solve(self, split: dict[str, float] | None = None,
              at_least: float | None = None) -> LPResult:
        """Optimum for `split`, warm-started after the first call (the joint LP picks its own
        split and uses `split` only to set the cuts).

        ``at_least`` (a rate some integral plan with this split reaches) adds the fan-in cuts
        sum_w A[s,w,v] <= floor(spare(v) / (x_s at_least)) Z[s,v]: a switch aggregating n
        workers for s carries n g_s <= spare(v) and emits a full stream Z = g_s, so every
        integral plan with rate >= at_least satisfies them.  The LP stays an upper bound on
        the best plan for the split, but no longer spreads aggregation thinly over many
        switches (whose streams the plain relaxation counts as almost free).

        The joint LP takes the same cuts with `split` as a reference split.  A plan with
        another split may exceed those fan-ins, so the joint LP with cuts bounds nothing; it
        only steers rounding towards fewer, fuller streams.  The joint LP without cuts
        (``at_least=None``) bounds every plan over every split.
        """
        t0 = time.perf_counter()
        m, f, g = self.model, self.f, self.g
        topo, paths = self.topo, self.paths
        W, S = topo.workers, topo.pss
        D, A, T, U = self.D, self.A, self.T, self.U
        if not self.joint:
            if split is None:
                raise ValueError("a fixed-split LP needs a split")
            for s, row in self.split_rows.items():
                m.set_coeff(row, f, -split[s])
        if at_least is not None and split is None:
            raise ValueError("fan-in cuts need a (reference) split")
        for (s, v), row in self.cut_rows.items():
            n = float(len(W))
            if at_least and split is not None and split[s] > 0:
                n = min(n, math.floor(max(topo.nodes[v].spare, 0.0) / (split[s] * at_least)
                                      + 1e-9))
            m.set_coeff(row, self.Z[(s, v)], -n)
        warm = self.loaded
        sol = m.resolve() if warm else m.solve(method=self.method)
        self.loaded = True
        x = sol.values
        rate = float(x[f])
        gs = {s: float(x[g[s]]) for s in S}
        split_out = {s: (gs[s] / rate if rate > 0 else 1.0 / len(S)) for s in S}
        direct, aggregate = {}, {}
        for s in S:
            for w in W:
                d = sum(x[c] for _, c in D[(s, w)])
                aggs = {v: float(x[A[(s, w, v)]]) for v in paths.switches_between(w, s)}
                total = d + sum(aggs.values())
                denom = total if total > 1e-12 else 0.0
                if denom == 0.0:
                    direct[(s, w)], aggregate[(s, w)] = 1.0, {}
                else:
                    direct[(s, w)] = d / denom
                    aggregate[(s, w)] = {v: a / denom for v, a in aggs.items() if a > 1e-12}

        def dist(entries: list[tuple[tuple[str, ...], int]]) -> dict[tuple[str, ...], float]:
            vals = {p: float(x[c]) for p, c in entries}
            tot = sum(vals.values())
            return {p: v / tot for p, v in vals.items() if v > 1e-12} if tot > 1e-12 else {}

        routes = {key: dist(entries) for key, entries in T.items()}
        return LPResult(
            rate=rate, split=split_out, direct=direct, aggregate=aggregate,
            direct_paths={k: dist(v) for k, v in D.items()},
            segment_paths={k: routes[key] for k, key in self.segment_of.items()},
            stream_paths={k: dist(v) for k, v in U.items()},
            seconds=time.perf_counter() - t0 + (0.0 if warm else self.build_seconds),
            size={"vars": m.num_vars, "rows": m.num_rows, "nonzeros": len(m.coo_val),
                  "build_ms": int(self.build_seconds * 1000), "highs_ms": int(sol.seconds * 1000)},
        )
