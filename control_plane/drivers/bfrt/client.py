"""One BF Runtime session with bf_switchd: subscribe, push the program, write, read.

bf_switchd serves BF Runtime gRPC on port 50052.  A client first subscribes on the stream
(``client_id``, ``device_id``).  A push (SetForwardingPipelineConfig
VERIFY_AND_WARM_INIT_BEGIN_AND_END) loads a program and returns when its warm init has ended;
it does not bind the client to it.  Every Write and Read here names its program in
``p4_name``, which bf_switchd resolves for any subscribed client, bound or not, so no BIND is
needed (and a BIND is refused while another client holds the program).  Every RPC has a
timeout (the push its own, longer one) and every failure raises BfrtError naming the switch
and the call; a failed Write also names each refused entry and bf_switchd's reason.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable
from dataclasses import dataclass

import grpc
from google.protobuf.message import DecodeError
from google.rpc import status_pb2

from control_plane.drivers.bfrt.info import BfrtInfo
from control_plane.drivers.bfrt.sde import BfrtStubs
from control_plane.drivers.streams import CHANNEL_OPTIONS, pump, queue_iter

DEFAULT_PORT = 50052
DEFAULT_TIMEOUT_S = 20.0
# A push returns only when bf_switchd has loaded the program and ended its warm init: seconds
# on a switch, much longer on the Tofino model (which also resets every table)
DEFAULT_PUSH_TIMEOUT_S = 180.0
ALL_PIPES = (0, 1, 2, 3)
SHOWN_FAILURES = 5
_CODE_NAMES = {c.value[0]: c.name for c in grpc.StatusCode}


class BfrtError(RuntimeError):
    """A BF Runtime call failed; ``code`` is the gRPC status when an RPC failed, ``failures``
    the refused updates of a Write as (index in the request, code name, bf_switchd's
    message)."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None,
                 failures: list[tuple[int, str, str]] | None = None):
        super().__init__(message)
        self.code = code
        self.failures = failures or []


def update_errors(pb2, exc: grpc.RpcError) -> list[tuple[int, str, str]]:
    """The per-update errors of a failed Write or Read: bf_switchd answers UNKNOWN "Write
    Error Status" and packs one ``bfrt_proto.Error`` per update (OK ones too, up to the last
    failure) into the google.rpc.Status of the ``grpc-status-details-bin`` trailer."""
    blob = next((v for k, v in (exc.trailing_metadata() or ())
                 if k == "grpc-status-details-bin"), None)
    error_type = getattr(pb2, "Error", None)
    if blob is None or error_type is None:
        return []
    try:
        status = status_pb2.Status.FromString(blob)
    except DecodeError:
        return []
    out = []
    for index, detail in enumerate(status.details):
        err = error_type()
        if detail.Unpack(err) and err.canonical_code != 0:
            out.append((index, _CODE_NAMES.get(err.canonical_code, str(err.canonical_code)),
                        err.message))
    return out


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
                 timeout: float = DEFAULT_TIMEOUT_S,
                 push_timeout: float = DEFAULT_PUSH_TIMEOUT_S):
        self.pb2 = stubs.pb2
        self.address, self.device_id, self.client_id = address, device_id, client_id
        self.timeout, self.push_timeout = timeout, push_timeout
        self.info: BfrtInfo | None = None  # once known: names entries in error messages
        self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._stub = stubs.grpc.BfRuntimeStub(self._channel)
        self._requests: queue.Queue = queue.Queue()
        self._responses: queue.Queue = queue.Queue()
        self._stream = None

    # -- session ------------------------------------------------------------------------------
    def _call(self, name: str, fn, request, timeout: float | None = None):
        try:
            return fn(request, timeout=self.timeout if timeout is None else timeout)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED and timeout is not None:
                raise BfrtError(f"{self.address}: {name} did not finish within {timeout:g} s "
                                f"(a longer --push-timeout?)", exc.code()) from None
            raise BfrtError(f"{self.address}: {name} failed: {exc.code().name}: "
                            f"{exc.details()}", exc.code()) from None

    def _describe(self, te) -> str:
        return self.info.describe(te) if self.info is not None else f"table id {te.table_id}"

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
        """Load ``program`` (replacing what runs: tables, registers, PRE start empty); waits
        up to ``push_timeout`` for the warm init to end.  Does not bind (see the module)."""
        kind = self.pb2.SetForwardingPipelineConfigRequest
        req = kind(device_id=self.device_id, client_id=self.client_id,
                   action=kind.VERIFY_AND_WARM_INIT_BEGIN_AND_END)
        cfg = req.config.add(p4_name=program.name, bfruntime_info=program.bfrt_json)
        cfg.profiles.add(profile_name="pipe", context=program.context_json,
                         binary=program.binary, pipe_scope=list(program.pipe_scope))
        self._call("SetForwardingPipelineConfig (push)", self._stub.SetForwardingPipelineConfig,
                   req, timeout=self.push_timeout)

    # -- entries ------------------------------------------------------------------------------
    @staticmethod
    def _set_from_hw(te) -> None:
        """``table_flags.from_hw``, or ``table_read_flag.from_hw`` (the field that SDEs
        before ``table_flags`` have, and later ones still honour) where stubs lack it."""
        fields = te.DESCRIPTOR.fields_by_name
        flags = te.table_flags if "table_flags" in fields else te.table_read_flag
        flags.from_hw = True

    def _target(self):
        return self.pb2.TargetDevice(device_id=self.device_id, pipe_id=0xFFFF, direction=0xFF,
                                     prsr_id=0xFF)

    def write(self, op: int, entries: Iterable, p4_name: str, what: str) -> None:
        """One Write RPC of ``entries`` (TableEntry messages), all with update type ``op``;
        a failure names each refused entry with bf_switchd's reason."""
        req = self.pb2.WriteRequest(client_id=self.client_id, p4_name=p4_name,
                                    target=self._target())
        for te in entries:
            req.updates.add(type=op).entity.table_entry.CopyFrom(te)
        try:
            self._stub.Write(req, timeout=self.timeout)
        except grpc.RpcError as exc:
            raise self._failed(f"Write ({what})", exc, self.pb2.Update.Type.Name(op),
                               [u.entity.table_entry for u in req.updates]) from None

    def read(self, entries: Iterable, p4_name: str, what: str, from_hw: bool = False) -> list:
        """The TableEntry messages a Read of ``entries`` (keys) returns; ``from_hw`` has
        bf_switchd read them from the hardware (counters: without it, the values it last
        synced into its software state), as the SDE's own client reads by default."""
        req = self.pb2.ReadRequest(client_id=self.client_id, p4_name=p4_name,
                                   target=self._target())
        for te in entries:
            sent = req.entities.add().table_entry
            sent.CopyFrom(te)
            if from_hw:
                self._set_from_hw(sent)
        try:
            return [e.table_entry for resp in self._stub.Read(req, timeout=self.timeout)
                    for e in resp.entities]
        except grpc.RpcError as exc:
            raise self._failed(f"Read ({what})", exc, "READ",
                               [e.table_entry for e in req.entities]) from None

    def _failed(self, call: str, exc: grpc.RpcError, verb: str, sent: list) -> BfrtError:
        """The error of a failed Write or Read: each refused entry (``sent[i]``) named, with
        bf_switchd's code and message, or the RPC's status where it packed none."""
        failures = update_errors(self.pb2, exc)
        if not failures:
            hint = ""
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:  # bf_switchd stops mid-batch
                hint = (f" (not done within the calls' timeout, {self.timeout:g} s; the Tofino "
                        f"model is slow: give it longer, e.g. inart install --timeout)")
            return BfrtError(f"{self.address}: {call} failed: {exc.code().name}: "
                             f"{exc.details()}{hint}", exc.code())
        lines = [f"{verb} {self._describe(sent[i]) if i < len(sent) else f'update {i}'}: "
                 f"{code}: {message}" for i, code, message in failures[:SHOWN_FAILURES]]
        if len(failures) > SHOWN_FAILURES:
            lines.append(f"... and {len(failures) - SHOWN_FAILURES} more")
        return BfrtError(f"{self.address}: {call}: {len(failures)} of {len(sent)} refused:"
                         f"\n    " + "\n    ".join(lines), exc.code(), failures)
