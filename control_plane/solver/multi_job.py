"""Several training jobs on one network, planned together: each job gets a share of every
resource it can use, and its plan is made (and validated) on that share.

The InArt paper plans one job; on several jobs it is silent (it cites ATP only for
multi-tenancy, and ATP shares switch memory at run time).  inart's rule, chosen to be
explainable in the terms of DESIGN.md section 2:

1. *Alone*: every job is planned on the network as if it ran alone (minus the loads of jobs
   whose plans are fixed): rate ``alone_j``, per-unit loads ``L_j(e)`` on every link, switch
   (aggregation capacity C(v)) and PS.
2. *Fair rates*: progressive filling on those routes, every job at the same fraction t of its
   alone rate (max-min fairness on ``rate / alone``): t grows until a resource is full, the
   jobs using it stop there, the others go on, up to t = 1.  No job is slowed for a resource
   it does not use, and jobs contending for one lose the same fraction.
3. *Shares*: job j is given ``r_j L_j(e)`` of every resource e plus an equal part of what the
   fair rates leave over on e, among the jobs whose part of the network holds e.  The shares
   of a resource sum to its spare capacity B(e) - b(e), so any plans that fit their shares
   fit the network together.
4. *Plans*: every job is planned again on its share (a topology whose background is the
   capacity it was not given), which may re-route it around the others; the better of that
   and its alone plan's decisions kept on the share wins, so no job falls below its fair rate.
5. *In turn*: shares can hide a better joint plan (fig1 split in two jobs: 1.5 each within
   shares, 2 each when the second job routes around the first), so every rotation of the
   jobs is also planned in turn, each job on what the ones before it left.  Every outcome is
   moved onto shares as in step 3 (at its own rates and loads), and the one with the highest
   lowest ``rate / alone`` wins (then the highest sum): the fairest, never a less fair one
   because another job gains.  When the alone plans fit together (every fair rate is the
   alone rate) they are the outcome, with no further solving; the outcomes are tried one
   after another (first rotation, shares, other rotations) and the search stops at one that
   keeps every job at its alone rate, since none is fairer.

A job alone on the network is planned on it unchanged (steps 1-3 give it everything).  Jobs
use disjoint workers and PSs (a host trains one job); aggregator slots are not part of the
model: each job has its own slot pool on every switch (control_plane/deploy/versions.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from control_plane.model.plan import Plan, keep_on
from control_plane.model.topology import Link, Node, Topology

Resource = tuple[str, ...]  # ("link", a, b) | ("switch", v) | ("ps", s)
Solver = Callable[[str, Topology], Plan]  # (job name, topology) -> a validated plan
TOLERANCE = 1e-9


class MultiJobError(ValueError):
    """Jobs that cannot be planned together; the message names the job and the field."""


@dataclass
class JointPlan:
    """One plan per job and how the shares were reached."""

    plans: dict[str, Plan]  # each on its share: plan.topology holds what the job was given
    alone: dict[str, float] = field(default_factory=dict)  # step 1's rates
    fair: dict[str, float] = field(default_factory=dict)  # step 2's rates
    errors: dict[str, str] = field(default_factory=dict)  # jobs with no plan, and why


def resources(plan: Plan) -> dict[Resource, float]:
    """A plan's load per unit of its rate on every resource it uses."""
    loads = plan.evaluate()
    out: dict[Resource, float] = {("switch", v): x for v, x in loads.switch.items()}
    out.update({("ps", s): x for s, x in loads.ps.items()})
    out.update({("link", a, b): x for (a, b), x in loads.link.items()})
    return {k: v for k, v in out.items() if v > TOLERANCE}


def spares(topo: Topology) -> dict[Resource, float]:
    """Spare capacity (capacity - background) of every resource of a topology."""
    out: dict[Resource, float] = {(n.kind, n.id): n.spare for n in topo.nodes.values()
                                  if n.kind != "worker"}
    out.update({("link", a, b): lk.spare for (a, b), lk in topo.links.items()})
    return out


def total_loads(plans: Mapping[str, Plan]) -> dict[Resource, float]:
    """Every resource's load from all plans at their rates (what the network must carry)."""
    out: dict[Resource, float] = defaultdict(float)
    for plan in plans.values():
        for res, x in resources(plan).items():
            out[res] += plan.rate * x
    return dict(out)


def with_spare(topo: Topology, spare: Mapping[Resource, float]) -> Topology:
    """``topo`` with the spare capacity of the resources in ``spare`` set to that value (its
    background raised to capacity - spare); other resources keep theirs exactly."""
    nodes = []
    for node in topo.nodes.values():
        s = spare.get((node.kind, node.id))
        nodes.append(node if s is None else
                     Node(node.id, node.kind, node.capacity, _background(node.capacity or 0, s)))
    links = []
    for (a, b), link in topo.links.items():
        s = spare.get(("link", a, b))
        links.append(link if s is None else Link(a, b, link.capacity,
                                                 _background(link.capacity, s)))
    return Topology(nodes, links, name=topo.name)


def _background(capacity: float, spare: float) -> float:
    return min(capacity, max(0.0, capacity - max(0.0, spare)))


def network_spares(topologies: Mapping[str, Topology]) -> dict[Resource, float]:
    """The spare capacity of every resource of the jobs' parts of one network; the parts
    must agree on every resource they share."""
    out: dict[Resource, float] = {}
    for name, topo in topologies.items():
        for res, s in spares(topo).items():
            if res in out and not math.isclose(out[res], s, rel_tol=1e-9, abs_tol=TOLERANCE):
                raise MultiJobError(f"jobs[{name}].topology: {' '.join(res[1:])} has spare "
                                    f"{s:g} here and {out[res]:g} in another job's part of "
                                    f"the network (expected one network)")
            out.setdefault(res, s)
    return out


def fair_rates(alone: Mapping[str, float], loads: Mapping[str, Mapping[Resource, float]],
               spare: Mapping[Resource, float]) -> dict[str, float]:
    """Progressive filling: every job at the same fraction of ``alone`` until a resource it
    uses is full (max-min fair on rate / alone); no job above its alone rate."""
    rate = {j: 0.0 for j in alone}
    active = {j for j, a in alone.items() if a > 0}
    t = 0.0
    while active:
        used = defaultdict(float)
        for j, r in rate.items():
            if j not in active:
                for res, x in loads[j].items():
                    used[res] += r * x
        step, full = 1.0, set()
        for res, cap in spare.items():
            demand = sum(alone[j] * loads[j].get(res, 0.0) for j in active)
            if demand <= TOLERANCE:
                continue
            bound = max(0.0, cap - used[res]) / demand
            if bound < step - TOLERANCE:
                step, full = bound, {res}
            elif abs(bound - step) <= TOLERANCE:
                full.add(res)
        t = max(t, step)
        for j in active:
            rate[j] = t * alone[j]
        if t >= 1.0 - TOLERANCE:
            break
        stopped = {j for j in active if any(loads[j].get(res, 0.0) > TOLERANCE for res in full)}
        active -= stopped or set(active)
    return rate


def share_topologies(topologies: Mapping[str, Topology], fair: Mapping[str, float],
                     loads: Mapping[str, Mapping[Resource, float]],
                     spare: Mapping[Resource, float]) -> dict[str, Topology]:
    """Step 3: each job's part of the network with the spare capacity it is given."""
    holders: dict[Resource, list[str]] = defaultdict(list)
    for name, topo in topologies.items():
        for res in spares(topo):
            holders[res].append(name)
    used = defaultdict(float)
    for j, r in fair.items():
        for res, x in loads[j].items():
            used[res] += r * x
    out = {}
    for name, topo in topologies.items():
        given = {}
        for res in spares(topo):
            if len(holders[res]) == 1 and math.isclose(spare[res], spares(topo)[res]):
                continue  # its own resource: the whole spare, background unchanged
            slack = max(0.0, spare[res] - used[res]) / len(holders[res])
            given[res] = fair[name] * loads[name].get(res, 0.0) + slack
        out[name] = with_spare(topo, given)
    return out


def plan_jobs(topologies: Mapping[str, Topology], solver: Solver,
              fixed: Mapping[str, Plan] | None = None) -> JointPlan:
    """Plans for every job of ``topologies`` (each job's part of one network: its workers
    and PSs and the switches between them) that fit the network together, beside the
    ``fixed`` plans (jobs that cannot change now; their loads are taken off first).

    ``solver(name, topology)`` plans one job; a job it cannot plan (any ValueError or
    RuntimeError, or a rate of 0) is reported in ``errors`` and gets no share."""
    spare = network_spares(topologies)
    taken = total_loads(fixed or {})
    for res, load in taken.items():
        if res in spare:
            spare[res] -= load
    parts = {name: with_spare(topo, {r: spare[r] for r in spares(topo) if r in taken})
             for name, topo in topologies.items()}
    joint = JointPlan({})
    alone: dict[str, Plan] = {}
    for name, topo in parts.items():
        plan = _solved(solver, name, topo, joint.errors)
        if plan is not None:
            alone[name] = plan
    joint.alone = {name: plan.rate for name, plan in alone.items()}
    if len(alone) <= 1:
        joint.plans, joint.fair = alone, dict(joint.alone)
        return joint
    loads = {name: resources(plan) for name, plan in alone.items()}
    joint.fair = fair_rates(joint.alone, loads, spare)
    jobs = {k: parts[k] for k in alone}

    def fairness(plans: dict[str, Plan]) -> tuple[float, float]:
        shares = [round(plans[k].rate / joint.alone[k], 9) for k in jobs]
        return min(shares), sum(shares)

    def outcomes() -> Iterator[dict[str, Plan]]:
        if all(joint.fair[k] >= joint.alone[k] * (1 - 1e-9) for k in jobs):
            yield dict(alone)  # the alone plans fit together: nobody is slowed
            return
        order = list(jobs)
        for first in range(len(order)):
            yield _in_turn(jobs, order[first:] + order[:first], spare, solver)
            if first == 0:
                yield _within_shares(jobs, alone, joint.fair, loads, spare, solver)
    best: dict[str, Plan] | None = None
    for outcome in outcomes():
        if len(outcome) < len(jobs):
            continue
        dressed = _dressed(jobs, outcome, spare)
        if best is None or fairness(dressed) > fairness(best):
            best = dressed
        if fairness(best)[0] >= 1.0:
            break  # every job at its alone rate: no outcome is fairer
    if best is None:
        joint.errors.update({k: f"no capacity left for job {k} beside the others"
                             for k in jobs})
        return joint
    joint.plans = best
    for name, plan in joint.plans.items():
        plan.meta["multi_job"] = {"jobs": len(jobs), "alone": joint.alone[name],
                                  "fair": joint.fair[name]}
    return joint


def _within_shares(jobs: Mapping[str, Topology], alone: Mapping[str, Plan],
                   fair: Mapping[str, float], loads: Mapping[str, Mapping[Resource, float]],
                   spare: Mapping[Resource, float], solver: Solver) -> dict[str, Plan]:
    """Steps 3-4: every job re-planned within the share its fair rate gives it."""
    out = {}
    for name, share in share_topologies(jobs, fair, loads, spare).items():
        options = [p for p in (keep_on(alone[name], share), _solved(solver, name, share, {}))
                   if p is not None and p.rate > TOLERANCE]
        if options:
            out[name] = max(options, key=lambda p: round(p.rate, 9))
    return out


def _in_turn(jobs: Mapping[str, Topology], order: list[str],
             spare: Mapping[Resource, float], solver: Solver) -> dict[str, Plan]:
    """Each job in ``order`` planned on what the ones before it left."""
    out: dict[str, Plan] = {}
    for name in order:
        left = dict(spare)
        for res, load in total_loads(out).items():
            left[res] = left.get(res, 0.0) - load
        topo = with_spare(jobs[name], {r: left[r] for r in spares(jobs[name])})
        plan = _solved(solver, name, topo, {})
        if plan is None:
            return out
        out[name] = plan
    return out


def _dressed(jobs: Mapping[str, Topology], plans: Mapping[str, Plan],
             spare: Mapping[Resource, float]) -> dict[str, Plan]:
    """Plans that fit together, each moved onto its share (its load at its rate plus an equal
    part of what all leave over), so every plan is valid against exactly what it was given
    and the shares of every resource sum to its spare."""
    rates = {k: p.rate for k, p in plans.items()}
    loads = {k: resources(p) for k, p in plans.items()}
    out = {}
    for name, share in share_topologies(jobs, rates, loads, spare).items():
        kept = keep_on(plans[name], share)
        out[name] = kept if kept is not None and kept.rate >= plans[name].rate * (1 - 1e-6) \
            else plans[name]
        out[name].meta.update({k: v for k, v in plans[name].meta.items()
                               if k not in out[name].meta})
    return out


def _solved(solver: Solver, name: str, topo: Topology, errors: dict[str, str]) -> Plan | None:
    try:
        plan = solver(name, topo)
    except (ValueError, RuntimeError) as exc:
        errors[name] = str(exc)
        return None
    if not plan.rate > TOLERANCE or not math.isfinite(plan.rate):
        errors[name] = f"no positive rate for job {name} (binding: {plan.evaluate().binding})"
        return None
    return plan


def check_fits(plans: Mapping[str, Plan], network: Topology) -> list[str]:
    """Every resource of ``network`` that the plans together load beyond its spare capacity
    (empty when they fit): the joint planner's promise, checked."""
    spare = spares(network)
    return [f"{' '.join(res)}: load {load:.6g} > spare {spare[res]:.6g}"
            for res, load in sorted(total_loads(plans).items())
            if load > spare.get(res, 0.0) * (1 + 1e-6) + TOLERANCE]


def job_part(topo: Topology, workers: list[str], pss: list[str]) -> Topology:
    """The part of ``topo`` one job plans on: its own workers and PSs, every switch, and the
    links among them (another job's hosts are left out: they are no transit nodes)."""
    for where, hosts, kind in (("workers", workers, "worker"), ("pss", pss, "ps")):
        wrong = [h for h in hosts if h not in topo.nodes or topo.nodes[h].kind != kind]
        if wrong or not hosts:
            raise MultiJobError(f"{where}: {wrong or 'none given'} (expected one or more "
                                f"{kind}s of {topo.name})")
    keep = set(workers) | set(pss) | set(topo.switches)
    nodes = [n for n in topo.nodes.values() if n.id in keep]
    links = [lk for (a, b), lk in topo.links.items() if a in keep and b in keep]
    return Topology(nodes, links, name=topo.name)

