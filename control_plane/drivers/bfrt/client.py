"""One BF Runtime session with bf_switchd: subscribe, push or bind the program, write, read.

bf_switchd serves BF Runtime gRPC on port 50052.  A client first subscribes on the stream
(``client_id``, ``device_id``), then either pushes a program (SetForwardingPipelineConfig
VERIFY_AND_WARM_INIT_BEGIN_AND_END, which also binds it) or binds to the one already loaded
(BIND); only a bound client may Write and Read.  Every RPC has a timeout and every failure
raises BfrtError naming the switch and the call.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable
from dataclasses import dataclass

import grpc

from control_plane.drivers.bfrt.sde import BfrtStubs
from control_plane.drivers.streams import CHANNEL_OPTIONS, pump, queue_iter

DEFAULT_PORT = 50052
DEFAULT_TIMEOUT_S = 20.0
ALL_PIPES = (0, 1, 2, 3)


class BfrtError(RuntimeError):
    """A BF Runtime call failed; ``code`` is the gRPC status when an RPC failed."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Program:
    """A compiled program as bf_switchd loads it (one pipeline profile)."""

    name: str
    bfrt_json: bytes
    context_json: bytes
    binary: bytes
    pipe_scope: tuple[int, ...] = ALL_PIPES


class BfrtClient:
    """A subscribed session; use as a context manager."""

    def __init__(self, stubs: BfrtStubs, address: str, device_id: int = 0, client_id: int = 0,
                 timeout: float = DEFAULT_TIMEOUT_S):
        self.pb2 = stubs.pb2
        self.address, self.device_id, self.client_id = address, device_id, client_id
        self.timeout = timeout
        self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._stub = stubs.grpc.BfRuntimeStub(self._channel)
        self._requests: queue.Queue = queue.Queue()
        self._responses: queue.Queue = queue.Queue()
        self._stream = None

    # -- session ------------------------------------------------------------------------------
    def _call(self, name: str, fn, request):
        try:
            return fn(request, timeout=self.timeout)
        except grpc.RpcError as exc:
            raise BfrtError(f"{self.address}: {name} failed: {exc.code().name}: "
                            f"{exc.details()}", exc.code()) from None

    def connect(self) -> BfrtClient:
        """Subscribe this client id to the device (bf_switchd answers on the stream)."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            raise BfrtError(f"{self.address}: no BF Runtime server answers within "
                            f"{self.timeout:.0f} s; is bf_switchd running (gRPC port "
                            f"{DEFAULT_PORT})?", grpc.StatusCode.UNAVAILABLE) from None
        self._stream = self._stub.StreamChannel(queue_iter(self._requests))
        threading.Thread(target=pump, args=(self._stream, self._responses), daemon=True).start()
        req = self.pb2.StreamMessageRequest(client_id=self.client_id)
        req.subscribe.device_id = self.device_id
        req.subscribe.notifications.enable_port_status_change_notifications = False
        self._requests.put(req)
        try:
            msg = self._responses.get(timeout=self.timeout)
        except queue.Empty:
            raise BfrtError(f"{self.address}: no answer to the subscription of client "
                            f"{self.client_id}") from None
        if isinstance(msg, grpc.RpcError):
            raise BfrtError(f"{self.address}: subscription refused: {msg.code().name}: "
                            f"{msg.details()}", msg.code())
        status = msg.subscribe.status
        if status.code != 0:
            raise BfrtError(f"{self.address}: subscription of client {self.client_id} to "
                            f"device {self.device_id} refused: {status.message} (code "
                            f"{status.code}); another client with this id?")
        return self

    def close(self) -> None:
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
        self._channel.close()

    def __enter__(self) -> BfrtClient:
        return self if self._stream is not None else self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- program ------------------------------------------------------------------------------
    def get_config(self):
        """GetForwardingPipelineConfigResponse: the loaded programs and the fixed tables."""
        req = self.pb2.GetForwardingPipelineConfigRequest(device_id=self.device_id,
                                                          client_id=self.client_id)
        return self._call("GetForwardingPipelineConfig", self._stub.GetForwardingPipelineConfig,
                          req)

    def push(self, program: Program) -> None:
        """Load ``program`` (replacing what runs: tables, registers, PRE start empty) and
        bind this client to it."""
        kind = self.pb2.SetForwardingPipelineConfigRequest
        req = kind(device_id=self.device_id, client_id=self.client_id,
                   action=kind.VERIFY_AND_WARM_INIT_BEGIN_AND_END)
        cfg = req.config.add(p4_name=program.name, bfruntime_info=program.bfrt_json)
        cfg.profiles.add(profile_name="pipe", context=program.context_json,
                         binary=program.binary, pipe_scope=list(program.pipe_scope))
        self._call("SetForwardingPipelineConfig (push)", self._stub.SetForwardingPipelineConfig,
                   req)

    def bind(self, p4_name: str) -> None:
        """Bind to the program bf_switchd already runs."""
        kind = self.pb2.SetForwardingPipelineConfigRequest
        req = kind(device_id=self.device_id, client_id=self.client_id, action=kind.BIND)
        req.config.add(p4_name=p4_name)
        self._call("SetForwardingPipelineConfig (bind)", self._stub.SetForwardingPipelineConfig,
                   req)

    # -- entries ------------------------------------------------------------------------------
    def _target(self):
        return self.pb2.TargetDevice(device_id=self.device_id, pipe_id=0xFFFF, direction=0xFF,
                                     prsr_id=0xFF)

    def write(self, op: int, entries: Iterable, p4_name: str, what: str) -> None:
        """One Write RPC of ``entries`` (TableEntry messages), all with update type ``op``."""
        req = self.pb2.WriteRequest(client_id=self.client_id, p4_name=p4_name,
                                    target=self._target())
        for te in entries:
            req.updates.add(type=op).entity.table_entry.CopyFrom(te)
        self._call(f"Write ({what})", self._stub.Write, req)

    def read(self, entries: Iterable, p4_name: str, what: str) -> list:
        """The TableEntry messages a Read of ``entries`` (keys) returns."""
        req = self.pb2.ReadRequest(client_id=self.client_id, p4_name=p4_name,
                                   target=self._target())
        for te in entries:
            req.entities.add().table_entry.CopyFrom(te)
        try:
            return [e.table_entry for resp in self._stub.Read(req, timeout=self.timeout)
                    for e in resp.entities]
        except grpc.RpcError as exc:
            raise BfrtError(f"{self.address}: Read ({what}) failed: {exc.code().name}: "
                            f"{exc.details()}", exc.code()) from None
