"""The gRPC face of the controller: every request is parsed and validated here first.

Handlers receive the raw request bytes and parse them themselves, so even bytes that are no
protobuf message get INVALID_ARGUMENT (gRPC's own deserialiser would answer INTERNAL).  Each
field is checked before the controller sees it: a malformed request gets INVALID_ARGUMENT
naming the field, an unknown id NOT_FOUND, and anything unexpected INTERNAL with a message;
no request can take the process down or change state half-way.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Iterator
from concurrent import futures

import grpc
from google.protobuf.message import Message
from prometheus_client import Histogram

from control_plane.deploy.addressing import AddressingError, assign
from control_plane.model.topology import Topology, TopologyError
from control_plane.quote import clip, quote
from control_plane.service.auth import AuthConfigError, TokenInterceptor, split_address
from control_plane.service.controller import Controller, ServiceError
from control_plane.service.network import SwitchInfo
from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.watch import Subscription
from control_plane.solver.solve import SCHEMES

log = logging.getLogger(__name__)

SERVICE = "inart.controller.v1.Controller"
MAX_MESSAGE = 32 << 20  # transport limit; fields have their own, smaller ones below
MAX_JSON = 16 << 20
MAX_NODES = 20000
MAX_LIST = 4096
MAX_ID = 64
MAX_NAME = 128
MAX_ADDRESS = 256
MAX_MODEL = 1e15
MAX_ROUND = (1 << 62) - 1  # a new version starts one round past the highest reported: that
# round must fit SQLite's signed 64-bit integers with room to spare
MAX_WATCHERS = 16
WORKERS = 32  # threads: watchers hold one each
LINK_EVENTS = (pb.EVENT_KIND_LINK_DOWN, pb.EVENT_KIND_LINK_UP, pb.EVENT_KIND_LINK_LOAD)
NODE_EVENTS = (pb.EVENT_KIND_PS_LOAD, pb.EVENT_KIND_SWITCH_DOWN, pb.EVENT_KIND_SWITCH_UP)
VALUE_EVENTS = (pb.EVENT_KIND_LINK_LOAD, pb.EVENT_KIND_PS_LOAD)


def invalid(field: str, why: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, f"{field}: {why}")


def check_id(value: str, field: str) -> str:
    """A node id as a request gives it: short printable text."""
    if not value:
        raise invalid(field, "missing (expected a node id)")
    if len(value) > MAX_ID:
        raise invalid(field, f"{quote(value)}: expected a printable id of at most {MAX_ID} "
                             f"characters")
    if not value.isprintable() or value != value.strip():
        raise invalid(field, f"{quote(value)}: expected a printable id without surrounding "
                             f"spaces")
    return value


def check_ids(values: list[str], field: str) -> list[str]:
    if len(values) > MAX_LIST:
        raise invalid(field, f"{len(values)} entries; at most {MAX_LIST}")
    out = [check_id(v, f"{field}[{i}]") for i, v in enumerate(values)]
    if len(set(out)) != len(out):
        dup = next(v for v in out if out.count(v) > 1)
        raise invalid(field, f"{quote(dup)} is listed twice")
    return out


def check_job_id(value: int, field: str = "job_id") -> int:
    if value < 1:
        raise invalid(field, "missing (expected a job id >= 1)")
    return value


def check_number(value: float, field: str, low: float, high: float,
                 open_low: bool = False) -> float:
    if not math.isfinite(value) or value < low or (open_low and value == low) or value > high:
        bound = f"> {low:g}" if open_low else f">= {low:g}"
        raise invalid(field, f"{quote(value)}: expected a finite number {bound} and <= {high:g}")
    return value


class Servicer:
    """One method per RPC: validate, then call the controller."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.watchers = 0
        self.lock = threading.Lock()

    def RegisterTopology(self, req: pb.RegisterTopologyRequest,
                         context: grpc.ServicerContext) -> pb.TopologyState:
        if not req.topology_json:
            raise invalid("topology_json", "missing (expected a topology object as JSON)")
        if len(req.topology_json) > MAX_JSON:
            raise invalid("topology_json", f"{len(req.topology_json)} characters; at most "
                                           f"{MAX_JSON}")
        try:
            data = json.loads(req.topology_json)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise invalid("topology_json", f"not valid JSON ({exc})") from None
        nodes = data.get("nodes") if isinstance(data, dict) else None
        if isinstance(nodes, list) and len(nodes) > MAX_NODES:
            raise invalid("topology_json", f"more than {MAX_NODES} nodes")
        try:
            topology = Topology.from_dict(data)
            addressing = assign(topology)
        except (TopologyError, AddressingError) as exc:
            raise invalid("topology_json", str(exc)) from None
        for i, node in enumerate(topology.nodes):
            check_id(node, f"topology_json: nodes[{i}].id")
        switches: dict[str, SwitchInfo] = {}
        for i, sw in enumerate(req.switches):
            where = f"switches[{i}]"
            name = check_id(sw.name, f"{where}.name")
            if name not in topology.nodes or topology.nodes[name].kind != "switch":
                raise ServiceError(grpc.StatusCode.NOT_FOUND,
                                   f"{where}.name: {quote(name)} is no switch of the topology")
            if name in switches:
                raise invalid(f"{where}.name", f"switch {quote(name)} is given twice")
            if len(sw.address) > MAX_ADDRESS:
                raise invalid(f"{where}.address", f"{quote(sw.address)}: expected HOST:PORT of "
                                                  f"at most {MAX_ADDRESS} characters")
            try:
                split_address(sw.address)
            except AuthConfigError as exc:
                raise invalid(f"{where}.address", str(exc)) from None
            device = sw.device_id if sw.HasField("device_id") else addressing.device_id[name]
            switches[name] = SwitchInfo(name, sw.address, device)
        missing = [s for s in topology.switches if s not in switches]
        if missing:
            raise invalid("switches", f"no address for switch(es) {', '.join(missing[:10])}")
        return self.controller.register(topology, switches)

    def GetTopology(self, req: pb.GetTopologyRequest,
                    context: grpc.ServicerContext) -> pb.TopologyState:
        return self.controller.topology_state()

    def SubmitJob(self, req: pb.SubmitJobRequest, context: grpc.ServicerContext) -> pb.Job:
        if len(req.name) > MAX_NAME or not req.name.isprintable():
            raise invalid("name", f"expected printable text of at most {MAX_NAME} characters")
        workers = check_ids(list(req.workers), "workers")
        pss = check_ids(list(req.pss), "pss")
        size = check_number(req.model_size, "model_size", 0.0, MAX_MODEL, open_low=True)
        scheme = req.scheme or "inart"
        if scheme not in SCHEMES:
            raise invalid("scheme", f"{quote(scheme)}: expected one of {', '.join(SCHEMES)}")
        return self.controller.submit(req.name, workers, pss, size, scheme, req.seed)

    def CancelJob(self, req: pb.CancelJobRequest, context: grpc.ServicerContext) -> pb.Job:
        return self.controller.cancel(check_job_id(req.job_id))

    def ListJobs(self, req: pb.ListJobsRequest,
                 context: grpc.ServicerContext) -> pb.ListJobsResponse:
        return self.controller.list_jobs(req.include_cancelled)

    def GetPlan(self, req: pb.GetPlanRequest, context: grpc.ServicerContext) -> pb.PlanVersion:
        return self.controller.get_plan(check_job_id(req.job_id), req.version)

    def ReportEvent(self, req: pb.ReportEventRequest,
                    context: grpc.ServicerContext) -> pb.ReportEventResponse:
        if req.kind not in LINK_EVENTS + NODE_EVENTS:
            raise invalid("kind", f"{req.kind}: expected one of "
                          f"{', '.join(pb.EventKind.Name(k) for k in LINK_EVENTS + NODE_EVENTS)}")
        name = pb.EventKind.Name(req.kind)
        link = None
        if req.kind in LINK_EVENTS:
            if not req.HasField("link"):
                raise invalid("link", f"missing (expected the link {name} is about)")
            link = (check_id(req.link.a, "link.a"), check_id(req.link.b, "link.b"))
            if req.node:
                raise invalid("node", f"not used by {name} (give link)")
        else:
            check_id(req.node, "node")
            if req.HasField("link"):
                raise invalid("link", f"not used by {name} (give node)")
        if req.kind in VALUE_EVENTS:
            check_number(req.value, "value", 0.0, math.inf)
        elif req.value != 0:
            raise invalid("value", f"not used by {name}")
        return self.controller.event(req.kind, link, req.node, req.value)

    def ReportProgress(self, req: pb.ReportProgressRequest,
                       context: grpc.ServicerContext) -> pb.PlanVersion:
        check_job_id(req.job_id)
        participant = check_id(req.participant, "participant")
        if req.round > MAX_ROUND:
            raise invalid("round", f"{req.round}: expected at most 2^62 - 1 ({MAX_ROUND})")
        return self.controller.progress(req.job_id, participant, req.round)

    def Reconcile(self, req: pb.ReconcileRequest,
                  context: grpc.ServicerContext) -> pb.ReconcileResponse:
        return self.controller.reconcile()

    def Watch(self, req: pb.WatchRequest, context: grpc.ServicerContext
              ) -> Iterator[pb.WatchEvent]:
        with self.lock:
            if self.watchers >= MAX_WATCHERS:
                raise ServiceError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                   f"{MAX_WATCHERS} Watch streams are open; close one")
            sub = self.controller.subscribe(req.job_id, req.since)
            self.watchers += 1
        released = threading.Event()

        def done() -> None:
            """Free the stream's slot and subscription, once, whichever way it ends."""
            with self.lock:
                if released.is_set():
                    return
                released.set()
                self.watchers -= 1
            self.controller.hub.unsubscribe(sub)
        # a call cancelled before this line never runs its callbacks: add_callback then
        # says False, and the slot is freed here instead
        if not context.add_callback(done):
            done()
        return self._stream(sub, context, done)

    @staticmethod
    def _stream(sub: Subscription, context: grpc.ServicerContext,
                done: Callable[[], None]) -> Iterator[pb.WatchEvent]:
        try:
            while context.is_active() and not sub.closed:
                event = sub.next(timeout=0.5)
                if event is not None:
                    yield event
        finally:  # also when gRPC drops the generator of a cancelled call unstarted
            done()


def _parse(cls: type[Message], raw: bytes) -> Message:
    request = cls()
    try:
        request.ParseFromString(raw)
    except Exception as exc:  # DecodeError, bad UTF-8, too deep nesting: all the caller's
        raise invalid("request", f"not a valid {cls.DESCRIPTOR.full_name} message "
                                 f"({type(exc).__name__}: {exc})") from None
    return request


def _abort(context: grpc.ServicerContext, name: str, exc: BaseException) -> None:
    """End the call with ``exc``'s status (INTERNAL for anything but a ServiceError, logged
    with its traceback: ``exc_info`` because this runs after the ``except`` block ended)."""
    if isinstance(exc, ServiceError):
        context.abort(exc.code, clip(str(exc)))
    log.error("%s failed", name, exc_info=exc)
    context.abort(grpc.StatusCode.INTERNAL, clip(f"{name}: {type(exc).__name__}: {exc}"))


def _unary(name: str, cls: type[Message], fn: Callable, latency: Histogram) -> Callable:
    timer = latency.labels(name)

    def handle(raw: bytes, context: grpc.ServicerContext) -> Message:
        with timer.time():
            try:
                return fn(_parse(cls, raw), context)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a status
                failure = exc
        _abort(context, name, failure)
        raise AssertionError("unreachable: abort raises")
    return handle


def _streaming(name: str, cls: type[Message], fn: Callable) -> Callable:
    def handle(raw: bytes, context: grpc.ServicerContext) -> Iterator[Message]:
        try:
            stream = fn(_parse(cls, raw), context)
        except Exception as exc:  # noqa: BLE001
            failure = exc
        else:
            yield from stream
            return
        _abort(context, name, failure)
    return handle


def handlers(servicer: Servicer) -> grpc.GenericRpcHandler:
    """The service's method handlers, built from the proto's service descriptor."""
    methods = {}
    for method in pb.DESCRIPTOR.services_by_name["Controller"].methods:
        cls = getattr(pb, method.input_type.name)
        fn = getattr(servicer, method.name)
        if method.server_streaming:
            methods[method.name] = grpc.unary_stream_rpc_method_handler(
                _streaming(method.name, cls, fn),
                response_serializer=lambda m: m.SerializeToString())
        else:
            methods[method.name] = grpc.unary_unary_rpc_method_handler(
                _unary(method.name, cls, fn, servicer.controller.metrics.rpc_seconds),
                response_serializer=lambda m: m.SerializeToString())
    return grpc.method_handlers_generic_handler(SERVICE, methods)


def build_server(controller: Controller, listen: str, token: str | None = None,
                 credentials: grpc.ServerCredentials | None = None) -> tuple[grpc.Server, int]:
    """A started gRPC server for ``controller`` and the port it listens on."""
    interceptors = [TokenInterceptor(token)] if token else []
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=WORKERS),
                         interceptors=interceptors,
                         options=[("grpc.max_receive_message_length", MAX_MESSAGE),
                                  ("grpc.max_send_message_length", MAX_MESSAGE),
                                  ("grpc.so_reuseport", 0)],
                         maximum_concurrent_rpcs=WORKERS * 4)
    server.add_generic_rpc_handlers((handlers(Servicer(controller)),))
    port = (server.add_secure_port(listen, credentials) if credentials
            else server.add_insecure_port(listen))
    if port == 0:
        raise AuthConfigError(f"--listen {quote(listen)}: cannot bind (in use or not an address of "
                              f"this machine)")
    server.start()
    return server, port

