"""A small Python client of the controller service (what `inart ctl` and hosts use).

    from control_plane.service.client import Client
    with Client("127.0.0.1:50070") as c:
        c.register_topology(build_topology("fig1"), {"v1": "127.0.0.1:50051", ...})
        job = c.submit(model_size=1e6)
        plan = c.plan(job.id)                       # PlanVersion, plan_json inside
        c.event("link-down", link=("w1", "v1"))
        for msg in c.watch(job.id): ...

Methods return the API's protobuf messages; ``to_dict`` turns one into plain JSON-able data.
Failures raise ``grpc.RpcError`` with the service's status code and message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from inspect import signature
from pathlib import Path

import grpc
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from control_plane.localhost import SERVICE_PORT
from control_plane.model.topology import Topology
from control_plane.service.auth import AuthConfigError
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.proto import inart_controller_pb2_grpc as pb_grpc

DEFAULT_ADDRESS = f"127.0.0.1:{SERVICE_PORT}"
EVENT_KINDS = {"link-down": pb.EVENT_KIND_LINK_DOWN, "link-up": pb.EVENT_KIND_LINK_UP,
               "link-load": pb.EVENT_KIND_LINK_LOAD, "ps-load": pb.EVENT_KIND_PS_LOAD,
               "switch-down": pb.EVENT_KIND_SWITCH_DOWN, "switch-up": pb.EVENT_KIND_SWITCH_UP}


# protobuf 5.26 renamed MessageToDict's including_default_value_fields; inart runs on both
_DEFAULTS = ("always_print_fields_with_no_presence"
             if "always_print_fields_with_no_presence" in signature(MessageToDict).parameters
             else "including_default_value_fields")


def to_dict(message: Message) -> dict:
    """A message as JSON-able data (field names as in the .proto, defaults included)."""
    return MessageToDict(message, preserving_proto_field_name=True, **{_DEFAULTS: True})


class Client:
    """One channel to the service; ``token`` is sent as bearer metadata, ``tls_ca`` (a PEM
    file) switches the channel to TLS (AuthConfigError if it cannot be read)."""

    def __init__(self, address: str = DEFAULT_ADDRESS, token: str | None = None,
                 tls_ca: str | Path | None = None, timeout: float = 120.0) -> None:
        self.address, self.timeout = address, timeout
        self.metadata = [("authorization", f"Bearer {token}")] if token else []
        if tls_ca is not None:
            try:
                ca = Path(tls_ca).read_bytes()
            except OSError as exc:
                raise AuthConfigError(f"--tls-ca {tls_ca}: {exc.strerror}") from None
            self.channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(ca))
        else:
            self.channel = grpc.insecure_channel(address)
        self.stub = pb_grpc.ControllerStub(self.channel)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    def _call(self, method: str, request: Message) -> Message:
        return getattr(self.stub, method)(request, timeout=self.timeout, metadata=self.metadata)

    # -- topology ------------------------------------------------------------------------------
    def register_topology(self, topology: Topology | Mapping | str,
                          switches: Mapping[str, str | tuple[str, int]]) -> pb.TopologyState:
        """``switches``: name -> "host:port" or ("host:port", device id)."""
        if isinstance(topology, Topology):
            text = json.dumps(topology.to_dict())
        elif isinstance(topology, str):
            text = topology
        else:
            text = json.dumps(topology)
        request = pb.RegisterTopologyRequest(topology_json=text)
        for name, where in switches.items():
            address, device = (where, None) if isinstance(where, str) else where
            sw = request.switches.add(name=name, address=address)
            if device is not None:
                sw.device_id = device
        return self._call("RegisterTopology", request)

    def topology(self) -> pb.TopologyState:
        return self._call("GetTopology", pb.GetTopologyRequest())

    # -- jobs ----------------------------------------------------------------------------------
    def submit(self, workers: Sequence[str] = (), pss: Sequence[str] = (),
               model_size: float = 1.0, scheme: str = "inart", seed: int = 0,
               name: str = "") -> pb.Job:
        return self._call("SubmitJob", pb.SubmitJobRequest(
            name=name, workers=list(workers), pss=list(pss), model_size=model_size,
            scheme=scheme, seed=seed))

    def cancel(self, job_id: int) -> pb.Job:
        return self._call("CancelJob", pb.CancelJobRequest(job_id=job_id))

    def jobs(self, include_cancelled: bool = False) -> list[pb.Job]:
        return list(self._call("ListJobs", pb.ListJobsRequest(
            include_cancelled=include_cancelled)).jobs)

    def plan(self, job_id: int, version: int = 0) -> pb.PlanVersion:
        return self._call("GetPlan", pb.GetPlanRequest(job_id=job_id, version=version))

    # -- events and hosts ----------------------------------------------------------------------
    def event(self, kind: str | int, link: tuple[str, str] | None = None, node: str = "",
              value: float = 0.0) -> pb.ReportEventResponse:
        """``kind``: one of EVENT_KINDS ("link-down", ...) or an EventKind number."""
        request = pb.ReportEventRequest(kind=EVENT_KINDS[kind] if isinstance(kind, str)
                                        else kind, node=node, value=value)
        if link is not None:
            request.link.a, request.link.b = link
        return self._call("ReportEvent", request)

    def progress(self, job_id: int, participant: str, round_: int) -> pb.PlanVersion:
        """Report the round a host is about to start; answers the version to use for it."""
        return self._call("ReportProgress", pb.ReportProgressRequest(
            job_id=job_id, participant=participant, round=round_))

    def reconcile(self) -> pb.ReconcileResponse:
        return self._call("Reconcile", pb.ReconcileRequest())

    def watch(self, job_id: int = 0, since: int = 0,
              timeout: float | None = None) -> Iterator[pb.WatchEvent]:
        """Messages as they happen (cancel the iterator, or close the client, to stop);
        ``timeout``: the stream ends with DEADLINE_EXCEEDED after that many seconds."""
        return self.stub.Watch(pb.WatchRequest(job_id=job_id, since=since),
                               metadata=self.metadata, timeout=timeout)
