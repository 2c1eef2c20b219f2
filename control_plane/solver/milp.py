"""The exact InArt problem (Eq. 1) as a MILP, for small instances and for checking rounding.

Binary choices per (PS s, worker w): one option among "direct on path p" and "aggregate at
switch v, reaching it on path p"; per (v, s) a stream flag z and one stream path.  Each binary
b carries rate g_s * b, linearised with big-M = M_s, the most g_s can be (its PS's spare
capacity, and Eq. 2's optimum, which bounds f >= g_s).  With a fixed split, g_s = x_s f;
otherwise g_s is free (the true optimum of Eq. 1 over splits too).

Valid rows that only tighten the relaxation (each holds for every integral plan):
- the rates of a pair's options sum to g_s (exactly one option carries it);
- a stream carries at least what any worker aggregated into it sends (Z >= A);
- a switch aggregates at most its spare capacity for s, and nothing while z = 0;
- workers of one class (paths.WorkerClass) are interchangeable, so their option indices for
  the first PS are ordered (symmetry breaking: each plan keeps one representative).
"""

from __future__ import annotations

from collections import defaultdict

from control_plane.model.plan import Flow, Plan
from control_plane.model.topology import Topology
from control_plane.solver.l_inart import l_inart
from control_plane.solver.lp_model import LPModel
from control_plane.solver.paths import PathSets, arcs


def solve_milp(topo: Topology, paths: PathSets, split: dict[str, float] | None = None,
               time_limit: float = 60.0, scheme: str = "milp", start: Plan | None = None,
               max_nodes: int | None = None) -> Plan:
    """Optimal integral plan (within the path sets); its rate is recomputed from decisions.

    `start` (a plan with the same split, or any plan if the split is free) is handed to HiGHS
    as its first incumbent, so the search only has to prove or beat it; `max_nodes` stops
    the search after that many branch-and-bound nodes (deterministic, unlike the time
    limit)."""
    m = LPModel()
    S = topo.pss
    eq2 = l_inart(topo).rate
    big = {s: max(min(topo.nodes[s].spare, eq2), 0.0) + 1e-9 for s in S}
    f = m.var(cost=1.0)
    g = {s: m.var(upper=big[s]) for s in S}
    if split is None:
        m.row([(f, 1.0)] + [(g[s], -1.0) for s in S], 0.0, 0.0)
    else:
        for s in S:
            m.row([(g[s], 1.0), (f, -split[s])], 0.0, 0.0)
    # resource -> rate terms; a resource is a node id or a directed link (src, dst)
    load: dict[str | tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    rate_of: dict[int, int] = {}  # binary column -> the column of the rate it carries

    def carried(s: str, node: str, path: tuple[str, ...]) -> tuple[int, int]:
        """A binary b whose rate r = g_s * b loads `node` and every link of `path`."""
        b = m.var(upper=1.0, integer=True)
        r = m.var(upper=big[s])
        m.row([(r, 1.0), (b, -big[s])], upper=0.0)
        m.row([(r, 1.0), (g[s], -1.0)], upper=0.0)
        m.row([(r, 1.0), (g[s], -1.0), (b, -big[s])], lower=-big[s])
        for resource in (node, *arcs(path)):
            load[resource].append((r, 1.0))
        rate_of[b] = r
        return b, r

    choices: dict[tuple[str, str], list[tuple[int, str | None, tuple[str, ...]]]] = {}
    zflag: dict[tuple[str, str], int] = {}
    zrate: dict[tuple[str, str], list[tuple[int, float]]] = {}
    fan: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    for s in S:
        for w in topo.workers:
            opts, rates = [], []
            for p in paths.get(w, s):
                b, r = carried(s, s, p)
                opts.append((b, None, p))
                rates.append(r)
            for v in paths.switches_between(w, s):
                if (v, s) not in zflag:
                    zflag[(v, s)] = m.var(upper=1.0, integer=True)
                    zrate[(v, s)] = []
                for p in paths.segments(w, v, s):
                    b, r = carried(s, v, p)
                    opts.append((b, v, p))
                    rates.append(r)
                    m.row([(b, 1.0), (zflag[(v, s)], -1.0)], upper=0.0)
                    fan[(v, s)].append((r, 1.0))
                    zrate[(v, s)].append((r, -1.0))
            m.row([(b, 1.0) for b, _, _ in opts], 1.0, 1.0)
            m.row([(r, 1.0) for r in rates] + [(g[s], -1.0)], 0.0, 0.0)
            choices[(s, w)] = opts
    stream_opts: dict[tuple[str, str], list[tuple[int, tuple[str, ...]]]] = {}
    for (v, s), z in zflag.items():
        opts, rates = [], []
        for p in paths.get(v, s):
            b, r = carried(s, s, p)
            opts.append((b, p))
            rates.append((r, 1.0))
        m.row([(b, 1.0) for b, _ in opts] + [(z, -1.0)], 0.0, 0.0)
        for agg, _ in zrate[(v, s)]:
            m.row(rates + [(agg, -1.0)], lower=0.0)  # Z >= A
        spare = max(topo.nodes[v].spare, 0.0)
        m.row(fan[(v, s)] + [(z, -spare)], upper=0.0)
        stream_opts[(v, s)] = opts
    for resource, terms in load.items():
        spare = (topo.links[resource] if isinstance(resource, tuple)
                 else topo.nodes[resource]).spare
        m.row(terms, upper=max(spare, 0.0))
    first = S[0]
    for cls in paths.classes:
        for a, b in zip(cls.members, cls.members[1:], strict=False):
            index = [(bin_, float(i)) for i, (bin_, _, _) in enumerate(choices[(first, a)])]
            index += [(bin_, -float(i)) for i, (bin_, _, _) in enumerate(choices[(first, b)])]
            m.row(index, upper=0.0)
    m.load(time_limit=time_limit, mip_gap=1e-6, max_nodes=max_nodes)
    if start is not None:
        values = _start_values(m, start, paths, g, f, choices, zflag, stream_opts, rate_of)
        if values is not None:
            m.set_start(values)
    sol = m.resolve()
    x = sol.values
    flows = []
    for (s, w), opts in choices.items():
        b, v, p = max(opts, key=lambda o: x[o[0]])
        flows.append(Flow(w, s, v, p))
    stream_paths = {f"{v}->{s}": list(max(opts, key=lambda o: x[o[0]])[1])
                    for (v, s), opts in stream_opts.items() if x[zflag[(v, s)]] > 0.5}
    total = sum(x[g[s]] for s in S)
    chosen = split or {s: float(x[g[s]] / total) if total > 0 else 1 / len(S) for s in S}
    plan = Plan(scheme, topo, dict(chosen), flows, meta={"stream_paths": stream_paths,
                                                          "milp_objective": float(x[f]),
                                                          "milp_optimal": sol.optimal})
    return plan.finalize()


def _start_values(m: LPModel, plan: Plan, paths: PathSets, g: dict[str, int], f: int,
                  choices: dict, zflag: dict, stream_opts: dict,
                  rate_of: dict[int, int]) -> list[float] | None:
    """Column values of `plan` in the MILP, its workers permuted within each class to satisfy
    the symmetry-breaking rows; None if a decision is not one of the MILP's options."""
    topo = plan.topology
    by_pair = {(fl.ps, fl.worker): fl for fl in plan.flows}
    first = topo.pss[0]

    def index(s: str, w: str, fl) -> int | None:
        for i, (_, v, p) in enumerate(choices[(s, w)]):
            if v == fl.aggregate_at and p == fl.path:
                return i
        return None

    rename: dict[str, str] = {}  # worker in the MILP -> worker whose decisions it takes
    for cls in paths.classes:
        keyed = []
        for w in cls.members:
            i = index(first, cls.rep, _as_member(by_pair[(first, w)], cls.rep, cls))
            if i is None:
                return None
            keyed.append((i, w))
        for target, (_, source) in zip(cls.members, sorted(keyed), strict=True):
            rename[target] = source
    cls_of = {w: c for c in paths.classes for w in c.members}
    x = [0.0] * m.num_vars
    x[f] = plan.rate
    for s in topo.pss:
        x[g[s]] = plan.rate * plan.partition[s]
    for (s, w), opts in choices.items():
        fl = _as_member(by_pair[(s, rename[w])], w, cls_of[w])
        i = index(s, w, fl)
        if i is None:
            return None
        b = opts[i][0]
        x[b] = 1.0
        x[rate_of[b]] = x[g[s]]
        if fl.aggregate_at is not None:
            x[zflag[(fl.aggregate_at, s)]] = 1.0
    for (v, s), opts in stream_opts.items():
        if x[zflag[(v, s)]] < 0.5:
            continue
        path = plan.stream_path(v, s)
        match = [b for b, p in opts if p == path]
        if not match:
            return None
        x[match[0]] = 1.0
        x[rate_of[match[0]]] = x[g[s]]
    return x


def _as_member(flow: Flow, member: str, cls) -> Flow:
    """`flow` (of a worker of class `cls`) as `member` would send it."""
    return Flow(member, flow.ps, flow.aggregate_at, (member, *flow.path[1:]))

