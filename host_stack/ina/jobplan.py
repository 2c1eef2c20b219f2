"""What the host stack needs from an ``inart.plan/1`` file (DESIGN.md section 2).

The control plane writes plans; the host stack only reads them.  This loader works at the JSON
level (no control_plane import, DESIGN.md section 1) and validates every field it uses, so a
wrong plan fails before any process starts, with a message naming the field.

Host-stack additions to the plan, all optional:
- ``job``: job id carried in every INA header (default 1, 0..65535).
- ``ranks``: worker id -> bitmap rank; default is the sorted order of worker ids.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from host_stack.ina.wire import MAX_WORKERS

SCHEMA = "inart.plan/1"
SHARE_TOLERANCE = 1e-6


class PlanError(ValueError):
    """A plan the host stack cannot run; the message names the field."""


@dataclass(frozen=True)
class JobPlan:
    """The parts of a plan one training job runs on."""

    job: int
    rate: float  # per-worker gradient sending rate f, in topology units
    ps_ids: tuple[str, ...]  # sorted PS ids that hold a share (share may be 0)
    shares: dict[str, float]  # x_s
    worker_ids: tuple[str, ...]  # in rank order
    aggregate_at: dict[tuple[str, str], str | None] = field(default_factory=dict)
    scheme: str = ""

    @property
    def workers(self) -> int:
        return len(self.worker_ids)

    def rank(self, worker: str) -> int:
        """Bitmap rank of a worker id."""
        try:
            return self.worker_ids.index(worker)
        except ValueError:
            raise PlanError(f"worker '{worker}': not in the plan (workers: "
                            f"{', '.join(self.worker_ids)})") from None

    def ps_rate_bps(self, ps: str, unit_bps: float | None) -> float | None:
        """Target sending rate of one worker towards ``ps`` in bit/s: f * x_s * unit_bps.

        ``unit_bps`` is the user's scale from topology units to bit/s; None means unpaced.
        """
        if unit_bps is None or self.rate <= 0:
            return None
        return self.rate * self.shares[ps] * unit_bps

    def chunk_ranges(self, n_values: int, n: int) -> dict[str, tuple[int, int]]:
        """Contiguous, chunk-aligned [first_chunk, end_chunk) of the flat vector per PS.

        The C = ceil(n_values / n) chunks are dealt by largest remainder of x_s * C in sorted
        PS order, so every PS gets whole chunks and the ranges tile [0, C) exactly.
        """
        total = math.ceil(n_values / n)
        exact = [self.shares[s] * total for s in self.ps_ids]
        counts = [int(math.floor(e)) for e in exact]
        order = sorted(range(len(exact)), key=lambda i: (counts[i] - exact[i], i))
        for i in order[: total - sum(counts)]:
            counts[i] += 1
        ranges, start = {}, 0
        for ps, cnt in zip(self.ps_ids, counts, strict=True):
            ranges[ps] = (start, start + cnt)
            start += cnt
        return ranges


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise PlanError(message)


def parse_plan(doc: Any) -> JobPlan:
    """Validate a decoded plan document and return its JobPlan."""
    _require(isinstance(doc, dict), "plan: expected a JSON object")
    _require(doc.get("schema") == SCHEMA,
             f"plan field 'schema'={doc.get('schema')!r}: expected {SCHEMA!r}")
    job = doc.get("job", 1)
    _require(isinstance(job, int) and not isinstance(job, bool) and 0 <= job < 1 << 16,
             f"plan field 'job'={job!r}: expected an integer 0..65535")
    rate = doc.get("rate", 0)
    _require(isinstance(rate, int | float) and not isinstance(rate, bool) and rate >= 0
             and math.isfinite(rate), f"plan field 'rate'={rate!r}: expected a number >= 0")
    topo = doc.get("topology")
    _require(isinstance(topo, dict) and isinstance(topo.get("nodes"), list),
             "plan field 'topology.nodes': expected a list of nodes")
    kinds: dict[str, str] = {}
    for i, node in enumerate(topo["nodes"]):
        _require(isinstance(node, dict) and isinstance(node.get("id"), str)
                 and node.get("kind") in ("worker", "ps", "switch"),
                 f"plan field 'topology.nodes[{i}]': expected {{'id': str, 'kind': "
                 f"'worker'|'ps'|'switch'}}, got {node!r}")
        kinds[node["id"]] = node["kind"]
    part = doc.get("partition")
    _require(isinstance(part, dict) and part, "plan field 'partition': expected {ps: share}")
    for ps, share in part.items():
        _require(kinds.get(ps) == "ps", f"plan field 'partition': '{ps}' is not a PS node")
        _require(isinstance(share, int | float) and not isinstance(share, bool)
                 and 0 <= share <= 1, f"plan field 'partition.{ps}'={share!r}: expected 0..1")
    total = sum(part.values())
    _require(abs(total - 1) <= SHARE_TOLERANCE,
             f"plan field 'partition': shares sum to {total}, expected 1")
    workers = sorted(n for n, k in kinds.items() if k == "worker")
    _require(0 < len(workers) <= MAX_WORKERS,
             f"plan field 'topology.nodes': {len(workers)} workers, expected 1..{MAX_WORKERS}")
    ranks = doc.get("ranks")
    if ranks is not None:
        _require(isinstance(ranks, dict) and sorted(ranks) == workers
                 and sorted(ranks.values()) == list(range(len(workers))),
                 f"plan field 'ranks': expected every worker mapped to a distinct rank "
                 f"0..{len(workers) - 1}")
        workers = sorted(workers, key=lambda w: ranks[w])
    aggregate_at: dict[tuple[str, str], str | None] = {}
    for i, flow in enumerate(doc.get("flows", [])):
        _require(isinstance(flow, dict), f"plan field 'flows[{i}]': expected an object")
        w, s, v = flow.get("worker"), flow.get("ps"), flow.get("aggregate_at")
        _require(kinds.get(w) == "worker", f"plan field 'flows[{i}].worker'={w!r}: no such worker")
        _require(kinds.get(s) == "ps", f"plan field 'flows[{i}].ps'={s!r}: no such PS")
        _require(v is None or kinds.get(v) == "switch",
                 f"plan field 'flows[{i}].aggregate_at'={v!r}: expected a switch id or null")
        aggregate_at[(w, s)] = v
    return JobPlan(job=job, rate=float(rate), ps_ids=tuple(sorted(part)),
                   shares={k: float(v) for k, v in part.items()}, worker_ids=tuple(workers),
                   aggregate_at=aggregate_at, scheme=str(doc.get("scheme", "")))


def load_plan(path: str | Path) -> JobPlan:
    """Read and validate a plan file."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise PlanError(f"plan file {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise PlanError(f"plan file {path}: not JSON ({exc})") from exc
    return parse_plan(doc)


def star_plan(workers: int, shares: dict[str, float] | list[float], job: int = 1,
              rate: float = 1.0) -> dict:
    """A minimal valid plan: w1..wW and the PSs on one switch v1, no in-network aggregation.

    For loopback runs and tests where no control-plane solve is wanted; real runs read the
    plan `inart plan` wrote.
    """
    if not isinstance(shares, dict):
        shares = {f"s{i + 1}": x for i, x in enumerate(shares)}
    wids = [f"w{i + 1}" for i in range(workers)]
    nodes = [{"id": "v1", "kind": "switch", "capacity": 1e9, "background": 0}]
    nodes += [{"id": s, "kind": "ps", "capacity": 1e9, "background": 0} for s in shares]
    nodes += [{"id": w, "kind": "worker"} for w in wids]
    hosts = [*shares, *wids]
    links = [{"src": a, "dst": b, "capacity": 1e9, "background": 0}
             for h in hosts for a, b in ((h, "v1"), ("v1", h))]
    flows = [{"worker": w, "ps": s, "aggregate_at": None, "path": [w, "v1", s]}
             for w in wids for s in shares]
    return {"schema": SCHEMA, "scheme": "lbmm", "job": job, "rate": rate, "upper_bound": rate,
            "topology": {"nodes": nodes, "links": links}, "partition": dict(shares),
            "flows": flows, "streams": []}
