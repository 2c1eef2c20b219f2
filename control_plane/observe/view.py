"""The web view's document: a JSON-able snapshot of a network and its jobs, whatever runs
it (`inart serve` or `inart emulate`), so one page draws both.

    {"source": "serve", "title": "...", "width": W, "height": H,
     "nodes": [{"id": "v1", "kind": "switch", "x": X, "y": Y}],
     "links": [{"a": "v1", "b": "v2", "capacity": 6, "load": {"v1->v2": 2.5, "v2->v1": 0},
                "utilisation": 0.42, "down": false}],
     "load_kind": "planned" | "measured",
     "jobs": [{"id": 1, "name": "", "state": "running", "round": 7, "version": 2,
               "rate_plan": 2.5, "rate_measured": null, "unit": "units", "verdict": null,
               "plan": {"scheme": "inart", "aggregate_at": ["v1"], "partition": {...},
                        "flows": [{"worker": "w1", "ps": "s1", "aggregate_at": "v1",
                                   "path": ["w1", "v1"]}],
                        "streams": [{"switch": "v1", "ps": "s1", "path": ["v1", "v2", "s1"]}]}}],
     "events": [{"time": T, "text": "..."}]}

Loads are in the topology's capacity units; ``utilisation`` is the busier direction's load
over the link's capacity.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from control_plane.model.plan import Plan
from control_plane.model.topology import Topology
from control_plane.observe.layout import WIDTH, height, layout

Directed = tuple[str, str]


def base(topo: Topology, source: str, title: str) -> dict[str, Any]:
    """The nodes at their places; links and jobs are added by ``links`` and ``job``."""
    pos = layout(topo)
    return {"source": source, "title": title, "width": WIDTH, "height": height(topo),
            "nodes": [{"id": n, "kind": topo.nodes[n].kind, "x": round(pos[n][0], 1),
                       "y": round(pos[n][1], 1)} for n in topo.nodes],
            "links": [], "jobs": [], "events": [], "load_kind": "planned"}


def links(topo: Topology, loads: Mapping[Directed, float], down: Iterable[frozenset[str]] = ()
          ) -> list[dict[str, Any]]:
    """One entry per physical link, with both directions' loads."""
    out, seen, down = [], set(), set(down)
    for (a, b), link in sorted(topo.links.items()):
        key = frozenset((a, b))
        if key in seen:
            continue
        seen.add(key)
        there, back = loads.get((a, b), 0.0), loads.get((b, a), 0.0)
        cap = link.capacity or 0.0
        out.append({"a": a, "b": b, "capacity": cap,
                    "load": {f"{a}->{b}": round(there, 6), f"{b}->{a}": round(back, 6)},
                    "utilisation": round(max(there, back) / cap, 4) if cap else 0.0,
                    "down": key in down})
    return out


def planned_loads(plans: Iterable[Plan]) -> dict[Directed, float]:
    """Every link direction's load from ``plans`` at their rates."""
    out: dict[Directed, float] = {}
    for plan in plans:
        for edge, per_unit in plan.evaluate().link.items():
            out[edge] = out.get(edge, 0.0) + plan.rate * per_unit
    return out


def plan_view(plan: Plan) -> dict[str, Any]:
    return {"scheme": plan.scheme, "rate": plan.rate, "partition": dict(plan.partition),
            "aggregate_at": sorted({f.aggregate_at for f in plan.flows if f.aggregate_at}),
            "flows": [{"worker": f.worker, "ps": f.ps, "aggregate_at": f.aggregate_at,
                       "path": list(f.path)} for f in plan.flows],
            "streams": [{"switch": s.switch, "ps": s.ps, "path": list(s.path)}
                        for s in plan.streams]}


def finite(x: float | None) -> float | None:
    """``x``, or None where it is no finite number (JSON has no NaN: the page's parser
    refuses the whole document)."""
    return x if x is not None and math.isfinite(x) else None


def job(job_id: int, name: str, state: str, round_: int | None, version: int,
        plan: Plan | None, rate_measured: float | None = None, unit: str = "units",
        verdict: str | None = None) -> dict[str, Any]:
    return {"id": job_id, "name": name, "state": state, "round": round_, "version": version,
            "rate_plan": finite(plan.rate) if plan else None,
            "rate_measured": finite(rate_measured), "unit": unit, "verdict": verdict,
            "plan": plan_view(plan) if plan else None}
