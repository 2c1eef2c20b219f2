"""The controller behind `inart serve`: jobs, plan versions, events, make-before-break and
reconcile.  The gRPC layer (server.py) validates requests and calls this.

Two locks.  ``io`` serialises everything that changes what the switches should hold or talks
to them (register, submit, cancel, events, drains, reconcile): one such operation at a time.
``lock`` guards the state itself and is held only while it is read or changed, never while a
switch is written or the solver runs (an operation holding ``io`` lets go of ``lock`` for
that: ``_unlocked``), so reads (ListJobs, GetPlan, GetTopology, Watch) and the hosts'
ReportProgress never wait for a switch that does not answer.  They see the state between
steps of an operation: a version being installed is listed but no host is answered with it
until it is made active, which happens in one step with choosing its switch_round.  ``io``
is always taken before ``lock``.

Life of a job
- SubmitJob: phases 1 and 2 on the job's part of the network, version 1 compiled into bank A
  of the job's lane (control_plane/deploy/versions.py) and installed; then the job runs.
  Jobs side by side are always planned together (control_plane/solver/multi_job.py: each on its
  share of what they contend for), so a submit or cancel re-plans the other jobs too.
- An event changes the network's modifiers, then every job is re-planned on the new state:
  phase 2 alone unless L-InArt's split moved (planner.py; a job whose hosts report
  progress keeps its split, since its PSs hold their shards).  A plan whose entries equal the
  running version's changes nothing.  Otherwise the new version goes into the other bank:
  *make*: every switch gets the new entries beside the old ones; the version becomes active
  with ``switch_round`` = one past the highest round any host has reported; the old one is
  *draining*.  *Break*: once every worker of both versions reported a round >= switch_round
  (or, when no worker had reported any round as the new version was made, ``drain_seconds``
  later: no host runs a round on the old one), the old entries are
  removed.  An event that arrives while a job still drains is applied to the network at once
  and the job is re-planned as soon as the drain ends (outcome DEFERRED).
- Hosts ask ReportProgress(job, me, round) before every round and use the version it answers:
  the newest with switch_round <= round.  Reports and re-plans are serialised by the lock,
  so every host switches at the same round: none is lost, none counted twice.
- CancelJob removes every entry of the job.

Reconcile is level-triggered: on start, every ``reconcile_interval`` seconds and on request,
every switch is read back and made to hold exactly the desired entries (switches.sync).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc

from control_plane.deploy.entries import Compiled, EntriesError, SwitchEntries
from control_plane.deploy.versions import (
    BANKS,
    MAX_JOBS,
    Lane,
    compile_version,
    network_routes,
    ps_address,
)
from control_plane.drivers.p4runtime import P4Info
from control_plane.model.plan import Plan
from control_plane.model.topology import Topology
from control_plane.quote import quote
from control_plane.service.metrics import ServiceMetrics
from control_plane.service.network import (
    Modifiers,
    Network,
    NetworkError,
    NoPlanError,
    SwitchInfo,
)
from control_plane.service.planner import Planned, plan_job
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.store import Store
from control_plane.service.switches import Installer, Item, ItemCache, Key, SyncResult, sync
from control_plane.service.watch import Hub, Subscription
from control_plane.solver.multi_job import plan_jobs

log = logging.getLogger(__name__)

SYNC_THREADS = 8
TICK_S = 0.1  # drain checks
JOB_STATES = {"running": pb.JOB_STATE_RUNNING, "degraded": pb.JOB_STATE_DEGRADED,
              "stalled": pb.JOB_STATE_STALLED, "cancelled": pb.JOB_STATE_CANCELLED}
VERSION_STATES = {"active": pb.VERSION_STATE_ACTIVE, "draining": pb.VERSION_STATE_DRAINING,
                  "retired": pb.VERSION_STATE_RETIRED}


class ServiceError(Exception):
    """A request the service refuses: a gRPC status and a message that names the field."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Version:
    """One plan of a job, installed in one bank of the job's lane while not retired."""

    number: int
    bank: int
    plan: Plan
    state: str  # active | draining | retired ("installing" while being made)
    reason: str
    phase: int
    phase1_split: dict[str, float]
    plan_seconds: float
    created: float = field(default_factory=time.time)
    switch_round: int = 0
    install_seconds: float = 0.0
    by_reports: bool = False  # drains when the workers report (else drain_seconds after made)
    compiled: Compiled | None = None
    items: dict[str, dict[Key, Item]] = field(default_factory=dict)  # per switch

    def body(self) -> dict[str, Any]:
        return {"bank": self.bank, "state": self.state, "reason": self.reason,
                "phase": self.phase, "phase1_split": self.phase1_split,
                "plan_seconds": self.plan_seconds, "created": self.created,
                "switch_round": self.switch_round, "install_seconds": self.install_seconds,
                "by_reports": self.by_reports}


@dataclass
class Job:
    """A training job and its versions."""

    id: int
    name: str
    workers: list[str]
    pss: list[str]
    model_size: float
    scheme: str
    seed: int
    slot: int
    state: str = "stalled"  # until its first version is installed
    message: str = ""
    created: float = field(default_factory=time.time)
    active: int = 0
    draining: int = 0
    replan_pending: bool = False
    versions: dict[int, Version] = field(default_factory=dict)
    progress: dict[str, int] = field(default_factory=dict)  # participant -> round reported

    @property
    def live(self) -> bool:
        return self.state != "cancelled"

    def body(self) -> dict[str, Any]:
        return {"name": self.name, "workers": self.workers, "pss": self.pss,
                "model_size": self.model_size, "scheme": self.scheme, "seed": self.seed,
                "slot": self.slot, "state": self.state, "message": self.message,
                "created": self.created, "active": self.active, "draining": self.draining,
                "replan_pending": self.replan_pending}


class Controller:
    """The service's state and every operation on it."""

    def __init__(self, store: Store, installer: Installer, info: P4Info,
                 drain_seconds: float = 2.0, reconcile_interval: float = 10.0) -> None:
        self.store, self.installer = store, installer
        self.cache = ItemCache(info)
        self._routes: tuple[tuple, dict[str, SwitchEntries]] | None = None
        self.drain_seconds, self.reconcile_interval = drain_seconds, reconcile_interval
        self.io = threading.RLock()  # one operation that changes desired state at a time
        self.lock = threading.Lock()  # the state; never held across switch I/O or solving
        self.hub = Hub(store)
        self.metrics = ServiceMetrics()
        self.network: Network | None = None
        self.jobs: dict[int, Job] = {}
        self.known: dict[str, dict[Key, Item] | None] = {}  # what each switch held last sync
        self.status: dict[str, SyncResult] = {}
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self._recover()
        self.metrics.watch(self)

    # -- start, stop, recover ------------------------------------------------------------------
    def _recover(self) -> None:
        """Rebuild the state a previous run left (the switches are reconciled on start)."""
        saved = self.store.load_network()
        if saved is None:
            return
        topology, switches, modifiers = saved
        self.network = Network(Topology.from_dict(topology),
                               {k: SwitchInfo(**v) for k, v in switches.items()},
                               Modifiers.from_dict(modifiers))
        for job_id, body in self.store.jobs():
            if body["state"] == "cancelled":
                continue
            job = Job(job_id, body["name"], body["workers"], body["pss"], body["model_size"],
                      body["scheme"], body["seed"], body["slot"], body["state"],
                      body["message"], body["created"], body["active"], body["draining"],
                      body["replan_pending"])
            job.progress = self.store.progress(job_id)
            for number, vbody, plan_json in self.store.versions(job_id):
                version = Version(number, vbody["bank"], Plan.from_dict(json.loads(plan_json)),
                                  vbody["state"], vbody["reason"], vbody["phase"],
                                  vbody["phase1_split"], vbody["plan_seconds"],
                                  vbody["created"], vbody["switch_round"],
                                  vbody["install_seconds"], vbody.get("by_reports", False))
                if version.state != "retired":
                    self._compile(job, version)
                job.versions[number] = version
            self.jobs[job_id] = job
        log.info("recovered %d job(s) from %s", len(self.jobs), self.store.path)

    def start(self) -> None:
        """Reconcile once, then keep draining and reconciling in the background."""
        if self.network is not None:
            self.reconcile()
        self.thread = threading.Thread(target=self._loop, name="controller", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(timeout=30)
        self.hub.close()
        self.installer.close()

    def _loop(self) -> None:
        next_reconcile = time.monotonic() + self.reconcile_interval
        while not self.stopping.wait(TICK_S):
            try:
                with self.io, self.lock:
                    self._check_drains()
                if time.monotonic() >= next_reconcile:
                    next_reconcile = time.monotonic() + self.reconcile_interval
                    if self.network is not None:
                        self.reconcile()
            except Exception as exc:  # the loop must outlive any one failure
                log.exception("controller loop")
                self.hub.publish(error=pb.ErrorReport(message=f"controller loop: {exc}"))

    # -- desired state and syncing -------------------------------------------------------------
    @contextmanager
    def _unlocked(self) -> Iterator[None]:
        """Let go of the state lock (held once, with ``io``) for switch I/O or solving."""
        self.lock.release()
        try:
            yield
        finally:
            self.lock.acquire()

    def _net(self) -> Network:
        if self.network is None:
            raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION,
                               "no topology registered: call RegisterTopology first")
        return self.network

    def _compile(self, job: Job, version: Version) -> None:
        net = self._net()
        version.compiled = compile_version(version.plan, net.addressing,
                                           Lane(job.slot, version.bank))
        version.items = {sw: self.cache.items([swe])
                         for sw, swe in version.compiled.switches.items()}

    def _desired(self) -> dict[str, dict[Key, Item]]:
        """What every switch that is not lost should hold now."""
        net = self._net()
        up = net.up_graph()
        key = (frozenset(map(frozenset, up.edges)), frozenset(up.nodes))
        if self._routes is None or self._routes[0] != key:
            self._routes = key, network_routes(net.topology, net.addressing, up)
        want = {sw: self.cache.items([swe]) for sw, swe in self._routes[1].items()}
        dead_ports = {(sw, port) for (sw, nb), port in net.addressing.port.items()
                      if not up.has_edge(sw, nb)}
        for job in self.jobs.values():
            for version in job.versions.values():
                if version.state == "retired":
                    continue
                for sw, items in version.items.items():
                    if sw in want:
                        want[sw].update(items)
                for sw, key in self._dead_routes(version, dead_ports):
                    want.get(sw, {}).pop(key, None)
        return want

    def _dead_routes(self, version: Version, dead_ports: set[tuple[str, int]]
                     ) -> list[tuple[str, Key]]:
        """(switch, key) of every ``route_pair`` entry of ``version`` for a (src, dst) pair
        whose path leaves a switch by one of ``dead_ports`` (its link is down), on every
        switch of that path.  Removing them lets that traffic fall back to ``route_dst``,
        computed on the links that are up (a pair's entries must all go: one left upstream
        would steer it back into the dead end): the round in flight on a draining version (its
        RETXs, never aggregated, and the PSs' answers) still reaches the PSs and workers."""
        if version.compiled is None or not dead_ports:
            return []
        pairs = [(sw, entry) for sw, swe in version.compiled.switches.items()
                 for entry in swe.entries if entry.table == "InaIngress.route_pair"]
        dead = {entry.match for sw, entry in pairs
                if (sw, dict(entry.params)["port"]) in dead_ports}
        return [(sw, self.cache.item(entry).key) for sw, entry in pairs if entry.match in dead]

    def _sync_all(self, want: dict[str, dict[Key, Item]], job_id: int = 0, version: int = 0,
                  step: str = "install", read: bool = False) -> dict[str, SyncResult]:
        """Sync every switch in ``want`` in parallel, reporting progress on Watch.  Called
        with ``io`` and the state lock held; the switch I/O runs without the state lock."""
        net = self._net()
        names = [sw for sw in want if sw in net.switches]
        infos = {sw: net.switches[sw] for sw in names}
        known = {sw: None if read else self.known.get(sw) for sw in names}
        results: dict[str, SyncResult] = {}
        synced: dict[str, dict[Key, Item] | None] = {}
        writes = 0

        def one(sw: str) -> tuple[SyncResult, dict[Key, Item] | None]:
            return sync(self.installer, infos[sw], want[sw], known[sw])
        with self._unlocked(), ThreadPoolExecutor(max(1, min(SYNC_THREADS, len(names)))) as pool:
            for sw, (result, held) in zip(names, pool.map(one, names), strict=True):
                results[sw], synced[sw] = result, held
                writes += result.writes
                if job_id:
                    self.hub.publish(job_id, install=pb.InstallProgress(
                        job_id=job_id, version=version, step=step, done=len(results),
                        total=len(names), updates=writes))
        for sw in names:
            self._set_status(results[sw], job_id)
            self.known[sw] = synced[sw]
        return results

    def _set_status(self, result: SyncResult, job_id: int = 0) -> None:
        """Remember a switch's last sync or probe; its error goes on Watch when new (or when
        a job's install met it)."""
        before = self.status.get(result.name)
        self.status[result.name] = result
        if result.error and (job_id or before is None or before.error != result.error):
            self.hub.publish(job_id, error=pb.ErrorReport(job_id=job_id, message=result.error))

    def _probe(self, switches: dict[str, SwitchInfo]) -> dict[str, SyncResult]:
        """Whether each switch answers, in parallel, holding no lock."""
        def one(info: SwitchInfo) -> SyncResult:
            result = SyncResult(info.name)
            try:
                self.installer.probe(info)
            except Exception as exc:  # any failure means: does not answer (yet)
                result.reachable, result.error = False, str(exc)
            return result
        if not switches:
            return {}
        with ThreadPoolExecutor(min(SYNC_THREADS, len(switches))) as pool:
            return {r.name: r for r in pool.map(one, switches.values())}

    def reconcile(self) -> pb.ReconcileResponse:
        """Read every switch back and repair it, then re-plan the jobs that wait for a switch
        (stalled, or their last version failed to install).  Lost switches, and those that
        did not answer last time, are probed first, beside the service's operations: one that
        still does not answer holds nothing up; the others are read back and repaired."""
        t0 = time.perf_counter()
        self.metrics.reconciles.inc()
        with self.lock:
            net = self._net()
            suspects = {sw: net.switches[sw] for sw in net.switches
                        if sw in net.mod.lost or not self.status.get(sw, SyncResult(sw)).reachable}
        probed = self._probe(suspects)
        with self.io:
            with self.lock:
                net = self._net()
                silent = {sw for sw, r in probed.items() if not r.reachable}
                results = self._sync_all({sw: items for sw, items in self._desired().items()
                                          if sw not in silent}, read=True)
                for sw, probe in probed.items():
                    if sw in net.switches and (sw in silent or sw in net.mod.lost):
                        results[sw] = probe
                        self._set_status(probe)
            response = pb.ReconcileResponse(seconds=time.perf_counter() - t0)
            for sw in sorted(results):
                r = results[sw]
                response.switches.add(name=sw, reachable=r.reachable,
                                      pipeline_pushed=r.pipeline_pushed, inserted=r.inserted,
                                      modified=r.modified, deleted=r.deleted, error=r.error)
            if any(r.writes or r.pipeline_pushed for r in results.values()):
                self.hub.publish(reconcile=response)
            self._retry()
        return response

    # -- topology --------------------------------------------------------------------------------
    def register(self, topology: Topology, switches: dict[str, SwitchInfo]) -> pb.TopologyState:
        with self.io, self.lock:
            live = [j.id for j in self.jobs.values() if j.live]
            if live:
                raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION,
                                   f"jobs {live} run on the registered topology: cancel them "
                                   f"before registering another")
            self.network = Network(topology, switches)
            self.known, self.status, self._routes = {}, {}, None
            self.jobs.clear()
            self.store.save_network(topology.to_dict(), {k: vars(v) for k, v in switches.items()},
                                    self.network.mod.to_dict(), clear_jobs=True)
            self._sync_all(self._desired(), read=True)
            return self._topology_state()

    def topology_state(self) -> pb.TopologyState:
        with self.lock:
            return self._topology_state()

    def _topology_state(self) -> pb.TopologyState:
        net = self.network
        if net is None:
            return pb.TopologyState()
        want = self._desired()
        state = pb.TopologyState(topology_json=json.dumps(net.topology.to_dict()),
                                 current_json=json.dumps(net.current()),
                                 events=self.store.event_count())
        for sw, info in sorted(net.switches.items()):
            result = self.status.get(sw)
            state.switches.add(name=sw, address=info.address, device_id=info.device_id,
                               lost=sw in net.mod.lost,
                               reachable=result is not None and result.reachable,
                               entries=len(want.get(sw, {})),
                               error=result.error if result else "")
        for link in sorted(sorted(k) for k in net.mod.down):
            state.down_links.add(a=link[0], b=link[1])
        return state

    # -- jobs ----------------------------------------------------------------------------------
    def submit(self, name: str, workers: list[str], pss: list[str], model_size: float,
               scheme: str, seed: int) -> pb.Job:
        with self.io, self.lock:
            net = self._net()
            workers = workers or net.topology.workers
            pss = pss or net.topology.pss
            for i, w in enumerate(workers):
                self._node(net, w, "worker", f"workers[{i}]")
            for i, s in enumerate(pss):
                self._node(net, s, "ps", f"pss[{i}]")
            live = [j for j in self.jobs.values() if j.live]
            for other in live:
                shared = sorted(set(other.workers + other.pss) & set(workers + pss))
                if shared:
                    raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION,
                                       f"workers/pss: {', '.join(shared[:5])} already belong "
                                       f"to job {other.id}")
            free = sorted(set(range(MAX_JOBS)) - {j.slot for j in live})
            if not free:
                raise ServiceError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                   f"{MAX_JOBS} jobs already run side by side (their switch "
                                   f"resources are split {MAX_JOBS} ways): cancel one first")
            job = Job(0, name, list(workers), list(pss), model_size, scheme, seed, free[0])
            job.id = self.store.new_job(job.body())
            self.jobs[job.id] = job
            self._replan_all(f"job {job.id} submitted")
            self.hub.publish(job.id, job=self.job_msg(job))
            return self.job_msg(job)

    @staticmethod
    def _node(net: Network, name: str, kind: str, where: str) -> None:
        try:
            net.node(name, kind, where)
        except NetworkError as exc:
            raise ServiceError(grpc.StatusCode.NOT_FOUND if exc.not_found
                               else grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None

    def _job(self, job_id: int) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            known = {i for i, _ in self.store.jobs()}
            state = "was cancelled" if job_id in known else "does not exist"
            raise ServiceError(grpc.StatusCode.NOT_FOUND, f"job_id: job {job_id} {state}")
        return job

    def cancel(self, job_id: int) -> pb.Job:
        with self.io, self.lock:
            job = self._job(job_id)
            job.state, job.message = "cancelled", ""
            for version in job.versions.values():
                version.state = "retired"
            job.active = job.draining = 0
            self._sync_all(self._desired(), job.id, 0, "remove")
            self.store.drop_job_state(job.id, job.body())
            del self.jobs[job.id]
            self._replan_all(f"job {job.id} cancelled")  # the others share what it freed
            msg = self.job_msg(job)
            self.hub.publish(job.id, job=msg)
            return msg

    def list_jobs(self, include_cancelled: bool) -> pb.ListJobsResponse:
        with self.lock:
            out = pb.ListJobsResponse(jobs=[self.job_msg(j) for j in self.jobs.values()])
            if include_cancelled:
                for job_id, body in self.store.jobs():
                    if job_id not in self.jobs:
                        out.jobs.add(id=job_id, name=body["name"], state=pb.JOB_STATE_CANCELLED,
                                     workers=body["workers"], pss=body["pss"],
                                     model_size=body["model_size"], scheme=body["scheme"],
                                     seed=body["seed"], created=body["created"])
            out.jobs.sort(key=lambda j: j.id)
            return out

    def get_plan(self, job_id: int, number: int) -> pb.PlanVersion:
        with self.lock:
            job = self._job(job_id)
            if number == 0:
                if not job.active:
                    raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION,
                                       f"job_id: job {job_id} has no plan yet ({job.message})")
                number = job.active
            version = job.versions.get(number)
            if version is None:
                raise ServiceError(grpc.StatusCode.NOT_FOUND,
                                   f"version: job {job_id} has no version {number} "
                                   f"(versions: {sorted(job.versions)})")
            return self.version_msg(job, version, with_plan=True)

    # -- re-planning -----------------------------------------------------------------------------
    def _replan_all(self, reason: str) -> dict[int, pb.JobReplan]:
        """Plan every job together on the network as it is (control_plane/solver/multi_job.py: each
        job on its share of the resources the jobs contend for) and install each new plan
        make-before-break.  A job whose version still drains keeps its plan (DEFERRED, re-planned
        once it drained) and the others are planned beside it; nothing is solved when neither
        the jobs nor their parts of the network changed since their plans were made."""
        net = self._net()
        outs: dict[int, pb.JobReplan] = {}
        parts: dict[int, tuple[Topology, list[str]]] = {}
        for job in list(self.jobs.values()):
            try:
                parts[job.id] = net.job_topology(job.workers, job.pss)
            except NoPlanError as exc:
                outs[job.id] = self._stall(job, pb.JobReplan(job_id=job.id), f"no plan: {exc}")
        key = _joint_key(parts, {j.id for j in self.jobs.values() if j.draining})
        fixed: dict[str, Plan] = {}
        free: dict[int, Job] = {}
        for job_id, (_, left_out) in parts.items():
            job = self.jobs[job_id]
            current = job.versions.get(job.active)
            if current is not None and current.plan.meta.get("joint") == key:
                fixed[str(job_id)] = current.plan
                outs[job_id] = self._unchanged(job, pb.JobReplan(job_id=job_id), left_out,
                                               "the job's part of the network and the jobs "
                                               "beside it did not change")
            elif job.draining and current is not None:
                fixed[str(job_id)] = current.plan
                job.replan_pending = True
                self._save(job)
                outs[job_id] = pb.JobReplan(job_id=job_id, outcome=pb.REPLAN_OUTCOME_DEFERRED,
                                            message=f"version {job.draining} still drains; "
                                                    f"re-planned once it did")
            else:
                free[job_id] = job
        if not free:
            return outs
        t0 = time.perf_counter()
        splits: dict[str, dict[str, float]] = {}

        def solver(name: str, topo: Topology) -> Plan:
            job = free[int(name)]
            current = job.versions.get(job.active)
            planned = plan_job(topo, job.scheme, job.seed, current.plan if current else None,
                               current.phase1_split if current else None,
                               [v.plan for v in job.versions.values() if v is not current],
                               hold_split=bool(job.progress))
            splits[name] = planned.phase1_split
            return planned.plan
        with self._unlocked():  # reads go on meanwhile; ``io`` keeps the jobs as they are
            joint = plan_jobs({str(i): parts[i][0] for i in free}, solver, fixed)
        seconds = time.perf_counter() - t0
        for job_id, job in free.items():
            plan = joint.plans.get(str(job_id))
            out = pb.JobReplan(job_id=job_id)
            if plan is None:
                outs[job_id] = self._stall(job, out, f"no plan: {joint.errors[str(job_id)]}")
                continue
            plan.meta["joint"] = key
            planned = Planned(plan, int(plan.meta.get("phase", 1)), splits[str(job_id)],
                              seconds)
            outs[job_id] = self._replan(job, reason, planned, parts[job_id][1])
        return outs

    def _replan(self, job: Job, reason: str, planned: Planned,
                left_out: list[str]) -> pb.JobReplan:
        """Install ``planned`` for ``job`` make-before-break, unless it changes nothing."""
        out = pb.JobReplan(job_id=job.id)
        current = job.versions.get(job.active)
        try:
            bank = 1 - current.bank if current else 0
            version = Version(max(job.versions, default=0) + 1, bank, planned.plan,
                              "installing", reason, planned.phase, planned.phase1_split,
                              planned.seconds)
            self._compile(job, version)
        except (EntriesError, ValueError) as exc:
            return self._stall(job, out, f"no plan: {exc}")
        out.phase = version.phase
        held = version.plan.meta.get("split_held")
        note = (f"; split kept while its hosts train (phase 1 would move it to "
                f"{_split_text(held)}: restart the job to apply)" if held else "")
        if current is not None and self._same_entries(job, current, version):
            current.plan.meta["joint"] = version.plan.meta.get("joint")
            self._save(job, [current])
            return self._unchanged(job, out, left_out, "the new plan has the same entries "
                                   "and rate" + note)
        # make: the new entries beside the old ones
        t0 = time.perf_counter()
        job.versions[version.number] = version
        results = self._sync_all(self._desired(), job.id, version.number, "install")
        failed = [r.error for sw, r in results.items() if r.error and version.items.get(sw)]
        if failed:
            del job.versions[version.number]
            self._sync_all(self._desired(), job.id, version.number, "remove")
            return self._stall(job, out, f"version {version.number} not installed: "
                               f"{failed[0]}", keep_state=current is not None)
        version.install_seconds = time.perf_counter() - t0
        self.metrics.installed(reason, version.install_seconds)
        version.state = "active"
        version.switch_round = max(job.progress.values(), default=-1) + 1
        version.by_reports = any(w in job.progress for w in job.workers)
        if current is not None:
            current.state = "draining"
            job.draining = current.number
        job.active = version.number
        job.state = "degraded" if left_out else "running"
        job.message = f"cut off: {', '.join(left_out)}" if left_out else ""
        self._save(job, [version] + ([current] if current else []))
        if current is not None:
            self.hub.publish(job.id, version=self.version_msg(job, current))
        self.hub.publish(job.id, version=self.version_msg(job, version))
        out.outcome, out.version = pb.REPLAN_OUTCOME_NEW_VERSION, version.number
        out.message = (f"version {version.number} (bank {BANKS[bank]}, phase {version.phase}): "
                       f"rate {version.plan.rate:.6g}, from round {version.switch_round}"
                       f"{note}")
        return out

    def _same_entries(self, job: Job, current: Version, new: Version) -> bool:
        """Whether ``new`` has ``current``'s rate and, compiled into its bank, exactly its
        entries."""
        if (current.plan.partition != new.plan.partition or current.compiled is None
                or round(current.plan.rate, 9) != round(new.plan.rate, 9)):
            return False  # a new rate is a new version: the hosts pace at it
        twin = compile_version(new.plan, self._net().addressing, Lane(job.slot, current.bank))

        def content(c: Compiled) -> dict[str, tuple[frozenset, frozenset]]:
            return {sw: (frozenset(e.entries), frozenset(e.groups))
                    for sw, e in c.switches.items() if e.entries or e.groups}
        return content(twin) == content(current.compiled)

    def _unchanged(self, job: Job, out: pb.JobReplan, left_out: list[str],
                   why: str) -> pb.JobReplan:
        state = "degraded" if left_out else "running"
        message = f"cut off: {', '.join(left_out)}" if left_out else ""
        if (job.state, job.message) != (state, message):
            job.state, job.message = state, message
            self._save(job)
            self.hub.publish(job.id, job=self.job_msg(job))
        out.outcome, out.version, out.message = pb.REPLAN_OUTCOME_UNCHANGED, job.active, why
        return out

    def _stall(self, job: Job, out: pb.JobReplan, why: str,
               keep_state: bool = False) -> pb.JobReplan:
        """No new version: the job keeps what it has (an install failure on a running job
        leaves its state; no plan at all stalls it).  The periodic retry re-plans it."""
        state = job.state if keep_state else "stalled"
        if (job.state, job.message) != (state, why):
            job.state, job.message = state, why
            self._save(job)
            self.hub.publish(job.id, error=pb.ErrorReport(job_id=job.id, message=why))
            self.hub.publish(job.id, job=self.job_msg(job))
        out.outcome, out.message = pb.REPLAN_OUTCOME_FAILED, why
        return out

    def _retry(self) -> None:
        """Re-plan every job: cheap for those whose part of the network did not change, and
        the retry of a job that is stalled or whose last version could not be installed."""
        with self.io, self.lock:
            self._replan_all("retry")

    def _save(self, job: Job, versions: Sequence[Version] = ()) -> None:
        self.store.save_job(job.id, job.body(),
                            [(v.number, v.body(), json.dumps(v.plan.to_dict())) for v in versions])

    # -- events ------------------------------------------------------------------------------
    def event(self, kind: int, link: tuple[str, str] | None, node: str,
              value: float) -> pb.ReportEventResponse:
        t0 = time.perf_counter()
        with self.io, self.lock:
            net = self._net()
            try:
                description = self._apply(net, kind, link, node, value)
            except NetworkError as exc:
                code = (grpc.StatusCode.NOT_FOUND if exc.not_found
                        else grpc.StatusCode.INVALID_ARGUMENT)
                raise ServiceError(code, str(exc)) from None
            self.store.save_modifiers(net.mod.to_dict())
            now = time.time()
            record = pb.EventRecord(kind=kind, node=node, value=value, time=now)
            if link:
                record.link.a, record.link.b = link
            record.id = self.store.log_event(now, {"kind": pb.EventKind.Name(kind),
                                                   "link": list(link or ()), "node": node,
                                                   "value": value, "what": description})
            self.hub.publish(event=record)
            self.metrics.events.labels(pb.EventKind.Name(kind)).inc()
            if kind in (pb.EVENT_KIND_SWITCH_DOWN, pb.EVENT_KIND_SWITCH_UP):
                self.known[node] = None  # it may restart meanwhile: read it back when back
            if kind == pb.EVENT_KIND_SWITCH_UP:  # try it now, even if it was silent lately
                with self._unlocked():
                    probed = self._probe({node: net.switches[node]})
                self._set_status(probed[node])
            response = pb.ReportEventResponse(event_id=record.id)
            reason = f"event {record.id}: {description}"
            replans = self._replan_all(reason)
            response.replans.extend(replans[i] for i in sorted(replans))
            if not any(r.outcome == pb.REPLAN_OUTCOME_NEW_VERSION for r in response.replans):
                self._sync_all(self._desired())  # the network's routes still change
            response.seconds = time.perf_counter() - t0
            return response

    @staticmethod
    def _apply(net: Network, kind: int, link: tuple[str, str] | None, node: str,
               value: float) -> str:
        """Validate an event against the network and apply it; returns what it did."""
        if kind in (pb.EVENT_KIND_LINK_DOWN, pb.EVENT_KIND_LINK_UP, pb.EVENT_KIND_LINK_LOAD):
            assert link is not None
            key = net.link(*link, where="link")
            if kind == pb.EVENT_KIND_LINK_LOAD:
                net.set_link_load(key, value, "value")
                return f"link {link[0]} <-> {link[1]} background {value:g}"
            net.set_link_down(key, kind == pb.EVENT_KIND_LINK_DOWN)
            return f"link {link[0]} <-> {link[1]} {'down' if kind == 1 else 'up'}"
        if kind == pb.EVENT_KIND_PS_LOAD:
            net.node(node, "ps", "node")
            net.set_ps_load(node, value, "value")
            return f"PS {node} background {value:g}"
        net.node(node, "switch", "node")
        net.set_switch_lost(node, kind == pb.EVENT_KIND_SWITCH_DOWN)
        return f"switch {node} {'lost' if kind == pb.EVENT_KIND_SWITCH_DOWN else 'back'}"

    # -- hosts' progress and draining ----------------------------------------------------------
    def progress(self, job_id: int, participant: str, round_: int) -> pb.PlanVersion:
        with self.lock:
            job = self._job(job_id)
            if participant not in job.workers and participant not in job.pss:
                raise ServiceError(grpc.StatusCode.NOT_FOUND,
                                   f"participant: {quote(participant)} is no worker or PS of "
                                   f"job {job_id}")
            if round_ > job.progress.get(participant, -1):
                job.progress[participant] = round_
                self.store.save_progress(job_id, participant, round_)
            due = self._drained(job)
        if due:  # this report may be the last one a drain waited for: break now
            with self.io, self.lock:
                self._check_drains()
        with self.lock:
            job = self._job(job_id)
            live = [v for v in job.versions.values()
                    if v.state in ("active", "draining") and v.switch_round <= round_]
            if not live:
                raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION,
                                   f"round: job {job_id} has no installed version for round "
                                   f"{round_} ({job.message or 'its old versions are retired'})")
            chosen = max(live, key=lambda v: (v.switch_round, v.number))
            return self.version_msg(job, chosen)

    def _drained(self, job: Job) -> bool:
        """Whether ``job``'s draining version is no longer used by any host."""
        if not job.draining:
            return False
        old, new = job.versions[job.draining], job.versions[job.active]
        if not new.by_reports:  # no worker had started a round when ``new`` was made
            return time.time() - new.created >= self.drain_seconds
        workers = set(old.plan.topology.workers) & set(new.plan.topology.workers)
        return all(job.progress.get(w, -1) >= new.switch_round for w in workers)

    def _check_drains(self) -> None:
        """Retire draining versions that no host uses any more (break)."""
        for job in list(self.jobs.values()):
            if not self._drained(job):
                continue
            old = job.versions[job.draining]
            old.state, job.draining = "retired", 0
            self._sync_all(self._desired(), job.id, old.number, "remove")
            self._save(job, [old])
            self.hub.publish(job.id, version=self.version_msg(job, old))
            if job.replan_pending:
                job.replan_pending = False
                self._replan_all(f"deferred re-plan of job {job.id}")

    def subscribe(self, job_id: int, since: int) -> Subscription:
        """A Watch subscription to one job (NOT_FOUND if unknown) or, with 0, to all."""
        if job_id:
            with self.lock:
                self._job(job_id)
        return self.hub.subscribe(job_id, since)

    # -- messages ----------------------------------------------------------------------------
    def job_msg(self, job: Job) -> pb.Job:
        return pb.Job(id=job.id, name=job.name, state=JOB_STATES[job.state],
                      workers=job.workers, pss=job.pss, model_size=job.model_size,
                      scheme=job.scheme, seed=job.seed, active_version=job.active,
                      draining_version=job.draining, message=job.message, created=job.created,
                      job_slot=job.slot)

    def version_msg(self, job: Job, v: Version, with_plan: bool = False) -> pb.PlanVersion:
        net = self._net()
        topo = v.plan.topology
        msg = pb.PlanVersion(job_id=job.id, version=v.number, bank=BANKS[v.bank],
                             wire_job=Lane(job.slot, v.bank).wire_job,
                             switch_round=v.switch_round,
                             state=VERSION_STATES.get(v.state, pb.VERSION_STATE_UNSPECIFIED),
                             rate=v.plan.rate, workers=topo.workers, pss=topo.pss,
                             partition=v.plan.partition, reason=v.reason, created=v.created,
                             phase=v.phase, plan_seconds=v.plan_seconds,
                             install_seconds=v.install_seconds)
        if with_plan:
            msg.plan_json = json.dumps(v.plan.to_dict())
        msg.addresses.update({w: net.addressing.ip[w] for w in topo.workers})
        msg.addresses.update({s: ps_address(net.addressing, s, v.bank) for s in topo.pss})
        if v.compiled is None:  # a version recovered from the store
            self._compile(job, v)
        if v.compiled is not None:
            msg.result_address = v.compiled.result_addr
            msg.pool_size = v.compiled.pool_size
            msg.ranks.update(v.compiled.ranks)
        return msg


def _split_text(split: dict[str, float]) -> str:
    return ", ".join(f"{ps} {share:.3g}" for ps, share in sorted(split.items()))


def _joint_key(parts: dict[int, tuple[Topology, list[str]]], draining: set[int]) -> str:
    """A digest of what a joint plan depends on: every job's part of the network, and which
    jobs keep their plans while a version drains."""
    doc = [[i, parts[i][0].to_dict(), i in draining] for i in sorted(parts)]
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]
