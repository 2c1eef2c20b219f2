"""Plans: the integral decisions of a scheme, their `inart.plan/1` JSON and their true rate.

A plan's rate is always recomputed from its own integral decisions (split, aggregation points,
paths) by `evaluate`; a rate copied from an LP would promise what the network cannot carry.
`validate` checks structure against the topology and names the binding constraint.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from control_plane.model.topology import Topology, TopologyError
from control_plane.model.unaggregated import unaggregated_tail
from control_plane.solver.paths import arcs

MAX_FAN_IN = 64  # workers per aggregated stream: the INA bitmap has one bit per rank

SCHEMA = "inart.plan/1"
TOLERANCE = 1e-6


class PlanError(ValueError):
    """A plan that does not fit its topology or the schema; the message names the field."""


@dataclass(frozen=True)
class Flow:
    """Gradients of one worker for one PS: aggregated at a switch, or direct to the PS."""

    worker: str
    ps: str
    aggregate_at: str | None
    path: tuple[str, ...]


@dataclass(frozen=True)
class Stream:
    """The aggregated v -> s stream a switch emits for one PS."""

    switch: str
    ps: str
    fan_in: int
    path: tuple[str, ...]


@dataclass
class Loads:
    """Load per unit of worker rate f on every resource, and the rate they allow."""

    switch: dict[str, float]
    ps: dict[str, float]
    link: dict[tuple[str, str], float]
    rate: float
    binding: str

    def at(self, rate: float) -> dict[str, dict[str, float]]:
        """Absolute loads at a given worker rate, keyed for printing/JSON."""
        return {
            "switch": {k: v * rate for k, v in self.switch.items()},
            "ps": {k: v * rate for k, v in self.ps.items()},
            "link": {f"{a}->{b}": v * rate for (a, b), v in self.link.items()},
        }


@dataclass
class Plan:
    """A scheme's decisions for one topology."""

    scheme: str
    topology: Topology
    partition: dict[str, float]
    flows: list[Flow]
    rate: float = 0.0
    upper_bound: float | None = None
    job: int = 1
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def streams(self) -> list[Stream]:
        """Aggregated streams, derived from the flows: one per (switch, PS) pair in use."""
        fan_in: dict[tuple[str, str], int] = defaultdict(int)
        for flow in self.flows:
            if flow.aggregate_at is not None:
                fan_in[(flow.aggregate_at, flow.ps)] += 1
        paths = self.meta.get("stream_paths", {})
        return [Stream(v, s, n, tuple(paths.get(f"{v}->{s}", ()))) for (v, s), n in
                sorted(fan_in.items())]

    def stream_path(self, switch: str, ps: str) -> tuple[str, ...]:
        return tuple(self.meta.get("stream_paths", {}).get(f"{switch}->{ps}", ()))

    # -- evaluation --------------------------------------------------------------------------
    def evaluate(self) -> Loads:
        """Loads of the integral decisions and the largest rate f they allow."""
        return evaluate(self)

    def finalize(self) -> Plan:
        """Validate and set `rate` from the plan's own loads."""
        self.rate = validate(self).rate
        return self

    # -- JSON ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema": SCHEMA,
            "scheme": self.scheme,
            "job": self.job,
            "rate": self.rate,
            "upper_bound": self.upper_bound,
            "topology": self.topology.to_dict(),
            "partition": dict(self.partition),
            "flows": [{"worker": f.worker, "ps": f.ps, "aggregate_at": f.aggregate_at,
                       "path": list(f.path)} for f in self.flows],
            "streams": [{"switch": s.switch, "ps": s.ps, "fan_in": s.fan_in,
                         "path": list(s.path)} for s in self.streams],
        }
        extra = {k: v for k, v in self.meta.items() if k != "stream_paths"}
        if extra:
            data["meta"] = extra
        return data

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        """Parse and validate a plan; errors name the bad field."""
        if not isinstance(data, dict):
            raise PlanError("plan: expected a JSON object")
        if data.get("schema") != SCHEMA:
            raise PlanError(f"plan 'schema'={data.get('schema')!r}: expected '{SCHEMA}'")
        for key, kind in (("scheme", str), ("topology", dict), ("partition", dict),
                          ("flows", list), ("streams", list)):
            if not isinstance(data.get(key), kind):
                raise PlanError(f"plan '{key}': missing or not a {kind.__name__}")
        try:
            topo = Topology.from_dict(data["topology"])
        except TopologyError as exc:
            raise PlanError(f"plan 'topology': {exc}") from exc
        flows = []
        for i, item in enumerate(data["flows"]):
            try:
                flows.append(Flow(str(item["worker"]), str(item["ps"]), item["aggregate_at"],
                                  tuple(item["path"])))
            except (KeyError, TypeError) as exc:
                raise PlanError(f"plan flows[{i}]: needs worker, ps, aggregate_at, path") from exc
        stream_paths = {}
        for i, item in enumerate(data["streams"]):
            try:
                stream_paths[f"{item['switch']}->{item['ps']}"] = list(item["path"])
            except (KeyError, TypeError) as exc:
                raise PlanError(f"plan streams[{i}]: needs switch, ps, fan_in, path") from exc
        job, rate = data.get("job", 1), data.get("rate", 0.0)
        if isinstance(job, bool) or not isinstance(job, int) or not 0 <= job < 1 << 16:
            raise PlanError(f"plan 'job'={job!r}: expected an integer 0..65535 (the INA "
                            "header's 16-bit job id)")
        if (isinstance(rate, bool) or not isinstance(rate, int | float)
                or not math.isfinite(rate) or rate < 0):
            raise PlanError(f"plan 'rate'={rate!r}: expected a finite number >= 0")
        meta = dict(data.get("meta") or {})
        meta["stream_paths"] = stream_paths
        plan = cls(scheme=data["scheme"], topology=topo,
                   partition={str(k): v for k, v in data["partition"].items()}, flows=flows,
                   rate=rate, upper_bound=data.get("upper_bound"), job=job, meta=meta)
        _validate_decisions(plan)
        declared = {(s["switch"], s["ps"]): s.get("fan_in") for s in data["streams"]}
        derived = {(s.switch, s.ps): s.fan_in for s in plan.streams}
        if declared != derived:
            raise PlanError(f"plan 'streams': {declared} do not match the aggregated flows "
                            f"{derived} (one stream per switch and PS, fan_in = its flows)")
        loads = validate(plan)
        if plan.rate > loads.rate * (1 + TOLERANCE):
            raise PlanError(f"plan 'rate'={plan.rate}: its loads allow at most {loads.rate:.6g} "
                            f"(binding: {loads.binding})")
        return plan

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        try:
            data = json.loads(Path(path).read_text())
        except json.JSONDecodeError as exc:
            raise PlanError(f"{path}: not valid JSON ({exc})") from exc
        return cls.from_dict(data)


def keep_on(plan: Plan, topo: Topology) -> Plan | None:
    """``plan``'s decisions on the network as it is now, or None if they no longer fit it
    (a path over a link that is down, a host cut off)."""
    kept = Plan(plan.scheme, topo, dict(plan.partition), list(plan.flows),
                meta={"stream_paths": dict(plan.meta.get("stream_paths", {}))})
    try:
        return kept.finalize()
    except (PlanError, KeyError):
        return None


def evaluate(plan: Plan) -> Loads:
    """Per-unit-rate loads of an integral plan and the rate they allow (DESIGN.md sec. 2)."""
    topo = plan.topology
    sw: dict[str, float] = defaultdict(float)
    ps: dict[str, float] = defaultdict(float)
    link: dict[tuple[str, str], float] = defaultdict(float)
    for flow in plan.flows:
        x = plan.partition[flow.ps]
        for arc in arcs(flow.path):
            link[arc] += x
        if flow.aggregate_at is None:
            ps[flow.ps] += x
        else:
            sw[flow.aggregate_at] += x
    for stream in plan.streams:
        x = plan.partition[stream.ps]
        ps[stream.ps] += x
        for arc in arcs(plan.stream_path(stream.switch, stream.ps)):
            link[arc] += x
    rate, binding = math.inf, "none"
    candidates = [(f"switch {k}", topo.nodes[k].spare, v) for k, v in sw.items()]
    candidates += [(f"ps {k}", topo.nodes[k].spare, v) for k, v in ps.items()]
    candidates += [(f"link {a}->{b}", topo.links[(a, b)].spare, v) for (a, b), v in link.items()]
    for name, spare, coef in candidates:
        if coef > TOLERANCE:
            r = max(spare, 0.0) / coef
            if r < rate:
                rate, binding = r, name
    return Loads(dict(sw), dict(ps), dict(link), rate, binding)


def validate(plan: Plan) -> Loads:
    """Check a plan against its topology (every field named on error); return its loads."""
    _validate_decisions(plan)
    topo = plan.topology
    for st in plan.streams:
        _check_path(topo, plan.stream_path(st.switch, st.ps), st.switch, st.ps,
                    f"plan stream {st.switch}->{st.ps} 'path'")
        if st.fan_in > MAX_FAN_IN:
            raise PlanError(f"plan stream {st.switch}->{st.ps}: fan_in {st.fan_in} > "
                            f"{MAX_FAN_IN} workers")
    _check_tails(plan)
    loads = evaluate(plan)
    if plan.upper_bound is not None and loads.rate > plan.upper_bound * (1 + 1e-4) + 1e-9:
        raise PlanError(f"plan 'upper_bound'={plan.upper_bound} is below the plan's own rate "
                        f"{loads.rate:.6g}")
    return loads


def _validate_decisions(plan: Plan) -> None:
    """Split and flows: one flow per (worker, PS), to a switch or the PS, on real links."""
    topo = plan.topology
    pss, workers = set(topo.pss), set(topo.workers)
    if set(plan.partition) != pss:
        raise PlanError(f"plan 'partition': keys {sorted(plan.partition)} must be the PSs "
                        f"{sorted(pss)}")
    for s, x in plan.partition.items():
        if not isinstance(x, int | float) or not 0 <= x <= 1:
            raise PlanError(f"plan 'partition'[{s}]={x!r}: expected a number in [0, 1]")
    if abs(sum(plan.partition.values()) - 1) > 1e-6:
        raise PlanError(f"plan 'partition': shares sum to {sum(plan.partition.values())}, not 1")
    seen = set()
    for i, f in enumerate(plan.flows):
        where = f"plan flows[{i}] ({f.worker}->{f.ps})"
        if f.worker not in workers:
            raise PlanError(f"{where}: 'worker' {f.worker!r} is not a worker of the topology")
        if f.ps not in pss:
            raise PlanError(f"{where}: 'ps' {f.ps!r} is not a PS of the topology")
        if (f.worker, f.ps) in seen:
            raise PlanError(f"{where}: a second flow for the same worker and PS")
        seen.add((f.worker, f.ps))
        end = f.ps
        if f.aggregate_at is not None:
            node = topo.nodes.get(f.aggregate_at)
            if node is None or node.kind != "switch":
                raise PlanError(f"{where}: 'aggregate_at' {f.aggregate_at!r} is not a switch")
            end = f.aggregate_at
        _check_path(topo, f.path, f.worker, end, f"{where} 'path'")
    missing = {(w, s) for w in workers for s in pss} - seen
    if missing:
        raise PlanError(f"plan 'flows': no flow for {sorted(missing)[:5]} (every worker sends "
                        "to every PS)")


def _check_tails(plan: Plan) -> None:
    """Every aggregated flow's unaggregated packets have a route on from its switch that
    does not revisit a switch of its path (model/unaggregated.py): else no switch could be
    told where to send them."""
    for i, f in enumerate(plan.flows):
        v = f.aggregate_at
        if v is None:
            continue
        stream = plan.stream_path(v, f.ps)
        if unaggregated_tail(plan.topology, f.path, f.ps, (stream,) if stream else ()) is None:
            raise PlanError(f"plan flows[{i}] ({f.worker}->{f.ps}) 'path': {list(f.path)} to "
                            f"its 'aggregate_at' {v} leaves no route from {v} to {f.ps} that "
                            f"avoids its switches, so the packets {v} passes on unaggregated "
                            f"cannot be forwarded (they would revisit a switch of the path)")


def _check_path(topo: Topology, path: tuple[str, ...], src: str, dst: str, where: str) -> None:
    if len(path) < 2 or path[0] != src or path[-1] != dst:
        raise PlanError(f"{where}: {list(path)} must run from {src} to {dst}")
    for node in path[1:-1]:
        if node not in topo.nodes or topo.nodes[node].kind != "switch":
            raise PlanError(f"{where}: intermediate node {node!r} is not a switch")
    for a, b in arcs(path):
        if (a, b) not in topo.links:
            have = ", ".join(f"{a}->{y}" for x, y in sorted(topo.links) if x == a)
            raise PlanError(f"{where}: no link {a}->{b} in the topology (links from {a}: "
                            f"{have or 'none'})")
