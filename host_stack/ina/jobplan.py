"""What the host stack needs from an ``inart.plan/1`` plan: a view over
`control_plane.model.plan.Plan`.

`Plan` is the one parser and validator of plans (topology, paths over real links, split, and a
claimed rate no higher than the plan's own loads allow), so a plan the control plane would
refuse never reaches a PS or worker.  This module only derives what those processes run on:
ids in rank order, shares, chunk ranges, aggregation points and the rate that drives pacing.

Host-stack addition to the plan file, optional: ``ranks`` (worker id -> bitmap rank), which the
emulation writes from the switches' entries; without it ranks follow the natural id order, the
order control_plane.deploy gives the switches.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from control_plane.model.plan import Flow, Plan, PlanError
from control_plane.model.topology import Link, Node, Topology
from host_stack.ina.wire import MAX_WORKERS


@dataclass(frozen=True)
class JobPlan:
    """A validated plan and the worker order (bitmap ranks) one training job runs on."""

    plan: Plan
    worker_ids: tuple[str, ...]  # in rank order

    @property
    def job(self) -> int:
        return self.plan.job

    @property
    def rate(self) -> float:
        """Per-worker gradient sending rate f, in topology units."""
        return float(self.plan.rate)

    @property
    def scheme(self) -> str:
        return self.plan.scheme

    @property
    def topology(self) -> Topology:
        return self.plan.topology

    @property
    def ps_ids(self) -> tuple[str, ...]:
        """PS ids in natural order (a PS may hold a zero share)."""
        return tuple(self.plan.topology.pss)

    @property
    def shares(self) -> dict[str, float]:
        """x_s per PS."""
        return {s: float(x) for s, x in self.plan.partition.items()}

    @cached_property
    def aggregate_at(self) -> dict[tuple[str, str], str | None]:
        """(worker, PS) -> the switch that aggregates that flow, or None (direct)."""
        return {(f.worker, f.ps): f.aggregate_at for f in self.plan.flows}

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

        The C = ceil(n_values / n) chunks are dealt by largest remainder of x_s * C in PS
        order, so every PS gets whole chunks and the ranges tile [0, C) exactly.
        """
        total = math.ceil(n_values / n)
        shares = self.shares
        exact = [shares[s] * total for s in self.ps_ids]
        counts = [int(math.floor(e)) for e in exact]
        order = sorted(range(len(exact)), key=lambda i: (counts[i] - exact[i], i))
        for i in order[: total - sum(counts)]:
            counts[i] += 1
        ranges, start = {}, 0
        for ps, cnt in zip(self.ps_ids, counts, strict=True):
            ranges[ps] = (start, start + cnt)
            start += cnt
        return ranges


def job_plan(plan: Plan, ranks: Any = None) -> JobPlan:
    """The job view of a valid plan; ``ranks`` is the plan file's optional worker -> rank."""
    workers = plan.topology.workers
    if len(workers) > MAX_WORKERS:
        raise PlanError(f"plan 'topology': {len(workers)} workers, at most {MAX_WORKERS} per "
                        "job (one bit each in the INA header's bitmap)")
    if ranks is not None:
        if (not isinstance(ranks, dict) or sorted(ranks) != sorted(workers)
                or sorted(ranks.values()) != list(range(len(workers)))):
            raise PlanError(f"plan 'ranks'={ranks!r}: expected every worker mapped to a "
                            f"distinct rank 0..{len(workers) - 1}")
        workers = sorted(workers, key=ranks.__getitem__)
    return JobPlan(plan, tuple(workers))


def parse_plan(doc: Any) -> JobPlan:
    """Validate a decoded plan document (with `Plan.from_dict`) and return its job view."""
    plan = Plan.from_dict(doc)
    return job_plan(plan, doc.get("ranks"))


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
              capacity: float = 1.0) -> Plan:
    """w1..wW and the PSs on one switch v1, no in-network aggregation (lbmm), every link, PS
    and the switch of ``capacity``; its rate is the one those capacities allow.

    For loopback runs (``inart train --plan star:W:K``), benches and tests where no solve is
    wanted; real runs read the plan `inart plan` wrote.
    """
    if not isinstance(shares, dict):
        shares = {f"s{i + 1}": x for i, x in enumerate(shares)}
    wids = [f"w{i + 1}" for i in range(workers)]
    nodes = [Node("v1", "switch", capacity)]
    nodes += [Node(s, "ps", capacity) for s in shares]
    nodes += [Node(w, "worker") for w in wids]
    links = [Link(a, b, capacity) for h in [*shares, *wids] for a, b in ((h, "v1"), ("v1", h))]
    topo = Topology(nodes, links, name=f"star:{workers}:{len(shares)}")
    flows = [Flow(w, s, None, (w, "v1", s)) for w in wids for s in shares]
    return Plan("lbmm", topo, dict(shares), flows, job=job).finalize()
