"""The best split x_s for fixed integral decisions (aggregation points and paths).

With routing fixed, every load is linear in g_s = f x_s, so the split that maximises f is a
|S|-variable LP.  `solve` uses it to refine L-InArt's topology-blind split against the rounded
routing: Eq. 2 cannot tell apart PSs that sit differently in the network.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from control_plane.model.plan import Plan
from control_plane.solver.lp_model import LPModel
from control_plane.solver.paths import arcs


def best_split(plan: Plan) -> dict[str, float]:
    """Split maximising the rate of `plan`'s own aggregation and routing decisions."""
    topo = plan.topology
    coef: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    spare: dict[str, float] = {}
    for flow in plan.flows:
        for a, b in arcs(flow.path):
            coef[f"link {a}->{b}"][flow.ps] += 1
            spare[f"link {a}->{b}"] = topo.links[(a, b)].spare
        target = flow.aggregate_at or flow.ps
        coef[target][flow.ps] += 1
        spare[target] = topo.nodes[target].spare
    for st in plan.streams:
        coef[st.ps][st.ps] += 1
        spare[st.ps] = topo.nodes[st.ps].spare
        for a, b in arcs(plan.stream_path(st.switch, st.ps)):
            coef[f"link {a}->{b}"][st.ps] += 1
            spare[f"link {a}->{b}"] = topo.links[(a, b)].spare
    m = LPModel()
    g = {s: m.var(cost=1.0) for s in topo.pss}
    for res, per_ps in coef.items():
        m.row([(g[s], c) for s, c in per_ps.items()], upper=max(spare[res], 0.0))
    sol = m.solve()
    total = sum(sol.values[g[s]] for s in topo.pss)
    if total <= 1e-12:
        return dict(plan.partition)
    return {s: float(sol.values[g[s]] / total) for s in topo.pss}


def refined(plan: Plan) -> Plan:
    """The same decisions with the split that maximises their rate (never lower)."""
    better = replace(plan, partition=best_split(plan), meta=dict(plan.meta))
    better.rate = better.evaluate().rate
    return better if better.rate >= plan.rate else plan
