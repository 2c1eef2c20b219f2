"""Hosts that follow a job's plan versions through the controller service (`inart serve`).

When the service re-plans a running job it installs the new version beside the old one, in the
other bank (control_plane/deploy/versions.py): its own wire job id, its own result address and
slot pool, and the PSs answering on their bank-B alias (10.6.x.y) instead of their own address.
Hosts learn it here:

- a worker asks before every round which version to use (ReportProgress); the service answers
  every host the same for a given round, so all switch at one round boundary: no round runs
  half on one version, none is lost or counted twice;
- a PS serves every installed version at once (active and draining), one socket per version on
  that version's address, so the round in flight finishes on the old version while the next
  starts on the new one; it learns versions from the Watch stream.

Hosts follow re-routing only (phase 2: same workers, ranks and split).  A version that moves
the split would need the PSs' shards (parameters and momentum) to move between PSs; that is
refused with an error that says so, and the job must be restarted from a checkpoint.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass

import grpc

from control_plane.service.client import Client
from control_plane.service.proto import inart_controller_pb2 as pb
from host_stack.ina import wire
from host_stack.ina.addresses import Address, AddressMap
from host_stack.ina.jobplan import JobPlan, parse_plan
from host_stack.ina.transport import TransportError

ACTIVE, DRAINING, RETIRED = (pb.VERSION_STATE_ACTIVE, pb.VERSION_STATE_DRAINING,
                             pb.VERSION_STATE_RETIRED)


class FollowError(TransportError):
    """The service cannot be reached or answered something the hosts cannot follow."""


@dataclass(frozen=True)
class HostVersion:
    """One plan version as a host runs it: the plan with this version's wire job id and the
    switches' ranks, and every address in this version's bank."""

    number: int
    plan: JobPlan
    addresses: AddressMap
    result_to: Address  # where PSs send each RESULT once (the switches replicate it)
    pool_size: int

    @classmethod
    def from_message(cls, msg: pb.PlanVersion) -> HostVersion:
        if not msg.plan_json:
            raise FollowError(f"version {msg.version}: the service sent no plan")
        doc = json.loads(msg.plan_json)
        doc["job"], doc["ranks"] = msg.wire_job, dict(msg.ranks)
        plan = parse_plan(doc)
        pss = set(msg.pss)
        addresses = AddressMap({node: (ip, wire.GRAD_PORT if node in pss else wire.RESULT_PORT)
                                for node, ip in msg.addresses.items()})
        return cls(msg.version, plan, addresses, (msg.result_address, wire.RESULT_PORT),
                   msg.pool_size)

    def check_follows(self, first: HostVersion, n_values: int, n: int) -> None:
        """FollowError unless this version only re-routes ``first``: same workers in the same
        rank order and the same chunk ranges per PS (the shards the PSs hold)."""
        if self.plan.worker_ids != first.plan.worker_ids:
            raise FollowError(f"version {self.number}: workers/ranks {self.plan.worker_ids} "
                              f"differ from version {first.number}'s {first.plan.worker_ids}; "
                              f"hosts follow re-routing only")
        if self.plan.chunk_ranges(n_values, n) != first.plan.chunk_ranges(n_values, n):
            raise FollowError(f"version {self.number}: the split moved "
                              f"({self.plan.shares} vs {first.plan.shares}); the PSs' shards "
                              f"would have to move: restart the job from a checkpoint")


class ServiceLink:
    """One host's connection to the service for one job."""

    def __init__(self, address: str, job_id: int, participant: str,
                 token: str | None = None, tls_ca: str | None = None,
                 timeout: float = 30.0) -> None:
        self.client = Client(address, token, tls_ca, timeout=timeout)
        self.job_id, self.participant = job_id, participant
        self._versions: dict[int, HostVersion] = {}
        self._watch: grpc.Future | None = None

    def _rpc(self, what: str, fn, *args):
        """``fn(*args)``; a service that does not answer (restarting: UNAVAILABLE) is asked
        again for up to the link's timeout before FollowError."""
        give_up = time.monotonic() + self.client.timeout
        while True:
            try:
                return fn(*args)
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.UNAVAILABLE and time.monotonic() < give_up:
                    time.sleep(0.2)
                    continue
                raise FollowError(f"service {self.client.address}: {what} for job "
                                  f"{self.job_id}: {exc.code().name}: {exc.details()}") from None

    def version(self, number: int = 0) -> HostVersion:
        """A version of the job (0: the active one), fetched once."""
        if number and number in self._versions:
            return self._versions[number]
        v = HostVersion.from_message(self._rpc("GetPlan", self.client.plan, self.job_id, number))
        self._versions[v.number] = v
        return v

    def for_round(self, round_: int) -> HostVersion:
        """The version to run ``round_`` on (this host reports it is about to start it)."""
        msg = self._rpc("ReportProgress", self.client.progress, self.job_id, self.participant,
                        round_)
        return self.version(msg.version)

    def installed(self) -> list[HostVersion]:
        """The versions whose entries are on the switches now (active, and draining if any)."""
        jobs = self._rpc("ListJobs", self.client.jobs)
        job = next((j for j in jobs if j.id == self.job_id), None)
        if job is None:
            raise FollowError(f"service {self.client.address}: no job {self.job_id}")
        return [self.version(n) for n in (job.active_version, job.draining_version) if n]

    def watch(self) -> queue.Queue:
        """A queue that receives (version number, VersionState) as the service announces them,
        from a background thread; (0, error text) if the stream breaks."""
        out: queue.Queue = queue.Queue()
        stream = self.client.watch(self.job_id)
        self._watch = stream

        def pump() -> None:
            try:
                for event in stream:
                    if event.WhichOneof("what") == "version":
                        out.put((event.version.version, event.version.state))
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.CANCELLED:
                    out.put((0, f"watch stream ended: {exc.code().name}: {exc.details()}"))

        threading.Thread(target=pump, name="inart-watch", daemon=True).start()
        return out

    def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        self.client.close()
