"""The exact InArt problem (Eq. 1) as a MILP, for small instances and for checking rounding.

Binary choices per (PS s, worker w): one option among "direct on path p" and "aggregate at
switch v, reaching it on path p"; per (v, s) a stream flag z and one stream path.  Each binary
b carries rate g_s * b, linearised with big-M = max spare PS capacity (g_s can never exceed it,
since the PS receives at least g_s).  With a fixed split, g_s = x_s f; otherwise g_s is free
(the true optimum of Eq. 1 over splits too).
"""

from __future__ import annotations

from collections import defaultdict

from control_plane.lp_model import LPModel
from control_plane.paths import PathSets, arcs
from control_plane.plan import Flow, Plan
from control_plane.topology import Topology


def solve_milp(topo: Topology, paths: PathSets, split: dict[str, float] | None = None,
               time_limit: float = 60.0, scheme: str = "milp") -> Plan:
    """Optimal integral plan (within the path sets); its rate is recomputed from decisions."""
    m = LPModel()
    S, W = topo.pss, topo.workers
    big = max(max(topo.nodes[s].spare for s in S), 1e-9)
    f = m.var(cost=1.0)
    g = {s: m.var(upper=big) for s in S}
    if split is None:
        m.row([(f, 1.0)] + [(g[s], -1.0) for s in S], 0.0, 0.0)
    else:
        for s in S:
            m.row([(g[s], 1.0), (f, -split[s])], 0.0, 0.0)
    # resource -> rate terms; a resource is a node id or a directed link (src, dst)
    load: dict[str | tuple[str, str], list[tuple[int, float]]] = defaultdict(list)

    def carried(s: str, node: str, path: tuple[str, ...]) -> int:
        """A binary b whose rate r = g_s * b loads `node` and every link of `path`."""
        b = m.var(upper=1.0, integer=True)
        r = m.var(upper=big)
        m.row([(r, 1.0), (b, -big)], upper=0.0)
        m.row([(r, 1.0), (g[s], -1.0)], upper=0.0)
        m.row([(r, 1.0), (g[s], -1.0), (b, -big)], lower=-big)
        for resource in (node, *arcs(path)):
            load[resource].append((r, 1.0))
        return b

    choices: dict[tuple[str, str], list[tuple[int, str | None, tuple[str, ...]]]] = {}
    zflag: dict[tuple[str, str], int] = {}
    for s in S:
        for w in W:
            opts = []
            for p in paths.get(w, s):
                opts.append((carried(s, s, p), None, p))
            for v in paths.switches_between(w, s):
                for p in paths.get(w, v):
                    b = carried(s, v, p)
                    opts.append((b, v, p))
                    if (v, s) not in zflag:
                        zflag[(v, s)] = m.var(upper=1.0, integer=True)
                    m.row([(b, 1.0), (zflag[(v, s)], -1.0)], upper=0.0)
            m.row([(b, 1.0) for b, _, _ in opts], 1.0, 1.0)
            choices[(s, w)] = opts
    stream_opts: dict[tuple[str, str], list[tuple[int, tuple[str, ...]]]] = {}
    for (v, s), z in zflag.items():
        opts = []
        for p in paths.get(v, s):
            opts.append((carried(s, s, p), p))
        m.row([(b, 1.0) for b, _ in opts] + [(z, -1.0)], 0.0, 0.0)
        stream_opts[(v, s)] = opts
    for resource, terms in load.items():
        spare = (topo.links[resource] if isinstance(resource, tuple)
                 else topo.nodes[resource]).spare
        m.row(terms, upper=max(spare, 0.0))
    sol = m.solve(time_limit=time_limit, mip_gap=1e-6)
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
