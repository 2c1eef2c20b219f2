"""The project's P4Runtime client: arbitration, pipeline push, table/default/multicast/clone
entries, counter and register reads by name.

Built directly on the P4Runtime API stubs (control_plane/p4runtime_api) rather than on
p4runtime-shell's global-state API, so a controller, the PTF tests and tools can hold
several clients at once, every RPC has a timeout, and failures raise exceptions (p4runtime-
shell calls ``sys.exit`` on some).  It speaks plain P4Runtime, so it drives bmv2
``simple_switch_grpc`` and the embedded target alike.  The update builders (table_update,
multicast_group_update, ...) are module functions so the embedded target's in-process device can
apply exactly what a client would send.

Names are the P4Info names (``InaIngress.route_dst``, ``InaIngress.set_next_hop``, ...); a name or
value that does not fit raises P4RuntimeError naming the table, field and what was expected.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import grpc
from google.rpc import code_pb2, status_pb2

from control_plane.drivers.p4runtime.entities import (
    CounterValue,
    Replicas,
    build_default_entry,
    build_table_entry,
    clone_session_update,
    encode_write_request,
    multicast_group_update,
    table_update,
)
from control_plane.drivers.p4runtime.p4info import P4Info
from control_plane.drivers.p4runtime.values import (
    DEFAULT_TIMEOUT_S,
    P4RuntimeError,
    Value,
    decode_value,
    encode_value,
)
from control_plane.drivers.streams import CHANNEL_OPTIONS, pump, queue_iter
from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

CLOSE_WAIT_S = 2.0  # how long close() waits for the server to end the stream

# ---------------------------------------------------------------------------------------------
# the client

__all__ = ["P4RuntimeClient"]


class P4RuntimeClient:
    """One primary controller session with one device.

    Use as a context manager.  ``election_id`` must be higher than any other client's for
    this client to become primary (needed for writes).
    """

    def __init__(self, address: str, device_id: int = 0, election_id: tuple[int, int] = (0, 1),
                 timeout: float = DEFAULT_TIMEOUT_S):
        self.address = address
        self.device_id = device_id
        self.election_id = p4runtime_pb2.Uint128(high=election_id[0], low=election_id[1])
        self.timeout = timeout
        self.info: P4Info | None = None
        self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        self._write_encoded = self._channel.unary_unary(  # takes the request as bytes
            "/p4.v1.P4Runtime/Write",
            response_deserializer=p4runtime_pb2.WriteResponse.FromString)
        self._requests: queue.Queue = queue.Queue()
        self._responses: queue.Queue = queue.Queue()
        self._stream = None
        self._reader: threading.Thread | None = None
        self.arbitration_code: int | None = None  # google.rpc code of the last arbitration
        self.primary_election_id: tuple[int, int] | None = None  # as the last arbitration said

    @property
    def is_primary(self) -> bool:
        return self.arbitration_code == code_pb2.OK

    # -- session --------------------------------------------------------------------------
    def wait_ready(self) -> P4RuntimeClient:
        """Wait for the server to answer (enough for reads, which need no arbitration).

        A Capabilities call that waits for the channel, not grpc.channel_ready_future: that
        one leaves a connectivity poller running which delays the end of the stream opened
        next by ~0.2 s (and raises in its thread once the channel is closed)."""
        try:
            self._stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=self.timeout,
                                    wait_for_ready=True)
        except grpc.RpcError as exc:
            if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise P4RuntimeError(
                    f"P4Runtime server {self.address} not reachable within "
                    f"{self.timeout:.0f} s", grpc.StatusCode.UNAVAILABLE) from None
        return self

    def connect(self, primary: bool = True) -> P4RuntimeClient:
        """Wait for the server, open the stream and become primary (or raise).

        With ``primary=False`` a backup session (a higher election id holds the device) is
        accepted too; ``wait_primary`` then waits for the server to promote it.  A refused
        arbitration raises with ``code`` set and ``primary_election_id`` telling who holds
        the device (when the server says).
        """
        self.wait_ready()
        self._stream = self._stub.StreamChannel(queue_iter(self._requests))
        self._reader = threading.Thread(target=pump, args=(self._stream, self._responses),
                                        daemon=True)
        self._reader.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.CopyFrom(self.election_id)
        self._requests.put(req)
        reply = self._next_stream_message("arbitration")
        code = self.arbitration_code = reply.arbitration.status.code
        if reply.arbitration.HasField("election_id"):
            eid = reply.arbitration.election_id
            self.primary_election_id = (eid.high, eid.low)
        if code != code_pb2.OK and (primary or code != code_pb2.ALREADY_EXISTS):
            raise P4RuntimeError(
                f"{self.address}: not primary for device {self.device_id} "
                f"(election id {self.election_id.high},{self.election_id.low}; status {code}: "
                f"{reply.arbitration.status.message})", grpc.StatusCode.PERMISSION_DENIED
            )
        return self

    def wait_primary(self, timeout: float | None = None) -> None:
        """Block until the server makes this (backup) session primary, e.g. after the primary
        left; raise if that does not happen within ``timeout`` (default: the client's)."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while not self.is_primary:
            reply = self._poll_stream("arbitration", deadline - time.monotonic())
            if reply is None:
                raise P4RuntimeError(f"{self.address}: still not primary for device "
                                     f"{self.device_id} after {timeout:.1f} s")
            self.arbitration_code = reply.arbitration.status.code
            eid = reply.arbitration.election_id
            self.primary_election_id = (eid.high, eid.low)

    def _next_stream_message(self, kind: str) -> p4runtime_pb2.StreamMessageResponse:
        msg = self._poll_stream(kind, self.timeout)
        if msg is None:
            raise P4RuntimeError(
                f"{self.address}: no {kind} message on the stream within {self.timeout} s")
        return msg

    def _poll_stream(self, kind: str, timeout: float
                     ) -> p4runtime_pb2.StreamMessageResponse | None:
        """The next ``kind`` message (others are dropped), or None after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = self._responses.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if isinstance(msg, grpc.RpcError):
                raise P4RuntimeError(f"{self.address}: stream closed: {msg.code().name}: "
                                     f"{msg.details()}", msg.code())
            if msg.WhichOneof("update") == kind:
                return msg

    def close(self) -> None:
        """End the stream from our side and give the server a moment to end it too, so it
        forgets this controller at once: a cancelled stream may linger on the server (the
        embedded target notices only when the call is collected) and make it refuse the next
        session with the same election id.  Then cancel whatever is left and close."""
        self._requests.put(None)
        if self._reader is not None:
            self._reader.join(timeout=CLOSE_WAIT_S)
        if self._stream is not None:
            self._stream.cancel()
        self._channel.close()

    def __enter__(self) -> P4RuntimeClient:
        """Connect unless ``connect()`` already did: a second arbitration on a second stream
        with the same election id is answered by nothing on bmv2 (the session would hang)."""
        return self if self._stream is not None else self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- pipeline ---------------------------------------------------------------------------
    def set_pipeline(self, p4info: str | Path | P4Info,
                     device_config: str | Path | bytes, cookie: int | None = None) -> None:
        """Push P4Info + target config (bmv2 JSON); this resets tables, registers, counters.

        Each is a file path or already in memory (a P4Info, the config's bytes).  ``cookie``
        (64 bits) tags the config, so a later ``get_pipeline`` can tell it from another.
        """
        self.info = P4Info.load(p4info)
        config = device_config if isinstance(device_config, bytes) else \
            Path(device_config).read_bytes()
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=self.election_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
        )
        req.config.p4info.CopyFrom(self.info.proto)
        req.config.p4_device_config = config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        self._call("SetForwardingPipelineConfig", self._stub.SetForwardingPipelineConfig, req)

    def get_pipeline(self, with_device_config: bool = False
                     ) -> p4runtime_pb2.ForwardingPipelineConfig | None:
        """The device's pipeline (P4Info and cookie; the device config too if asked), or None
        when it has none (bmv2 answers FAILED_PRECONDITION, others an empty config)."""
        kind = p4runtime_pb2.GetForwardingPipelineConfigRequest
        req = kind(device_id=self.device_id,
                   response_type=kind.ALL if with_device_config else kind.P4INFO_AND_COOKIE)
        try:
            reply = self._stub.GetForwardingPipelineConfig(req, timeout=self.timeout)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:
                return None
            raise _rpc_failure(f"GetForwardingPipelineConfig on {self.address}", exc) from None
        return reply.config if reply.config.HasField("p4info") else None

    def use_p4info(self, p4info: str | Path | P4Info) -> None:
        """Use this P4Info for names without pushing a pipeline (one is already running)."""
        self.info = P4Info.load(p4info)

    def _p4info(self) -> P4Info:
        if self.info is None:
            raise P4RuntimeError("no P4Info: call set_pipeline() or use_p4info() first")
        return self.info

    # -- writes -------------------------------------------------------------------------------
    def _call(self, what: str, method, request):
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as exc:
            raise _rpc_failure(f"{what} on {self.address}", exc) from None

    def write(self, updates: Sequence[p4runtime_pb2.Update], what: str = "Write") -> None:
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id, election_id=self.election_id)
        req.updates.extend(updates)
        self._call(what, self._stub.Write, req)

    def write_encoded(self, updates: Sequence[bytes], what: str = "Write") -> None:
        """Write already serialized Updates (``encode_update``) in one request.

        With pure-python protobuf (what protobuf 3.20, which the project used before protobuf 6,
        gives Python 3.11) copying Updates into a WriteRequest and serializing it cost more than
        bmv2 needs to apply them; an installer serializes each entity once and the request is a
        concatenation."""
        request = encode_write_request(self.device_id, self.election_id, updates)
        self._call(what, self._write_encoded, request)

    def insert_table_entry(self, table: str, match: Mapping[str, object], action: str,
                           params: Mapping[str, Value] | None = None, priority: int = 0) -> None:
        entry = build_table_entry(self._p4info(), table, match, action, params, priority)
        self.write([table_update(entry, p4runtime_pb2.Update.INSERT)], f"insert into '{table}'")

    def modify_table_entry(self, table: str, match: Mapping[str, object], action: str,
                           params: Mapping[str, Value] | None = None, priority: int = 0) -> None:
        entry = build_table_entry(self._p4info(), table, match, action, params, priority)
        self.write([table_update(entry, p4runtime_pb2.Update.MODIFY)], f"modify in '{table}'")

    def delete_table_entry(self, table: str, match: Mapping[str, object],
                           priority: int = 0) -> None:
        entry = build_table_entry(self._p4info(), table, match, None, None, priority)
        self.write([table_update(entry, p4runtime_pb2.Update.DELETE)], f"delete from '{table}'")

    def set_default_action(self, table: str, action: str | None = None,
                           params: Mapping[str, Value] | None = None) -> None:
        """Set a table's default action; without one, reset it to the program's default."""
        entry = build_default_entry(self._p4info(), table, action, params)
        self.write([table_update(entry, p4runtime_pb2.Update.MODIFY)],
                   f"default action of '{table}'")

    def insert_multicast_group(self, group_id: int, replicas: Replicas) -> None:
        """PRE multicast group: replicas are (egress port, instance = egress_rid) pairs."""
        self.write([multicast_group_update(group_id, replicas)], f"multicast group {group_id}")

    def modify_multicast_group(self, group_id: int, replicas: Replicas) -> None:
        self.write([multicast_group_update(group_id, replicas, p4runtime_pb2.Update.MODIFY)],
                   f"multicast group {group_id}")

    def delete_multicast_group(self, group_id: int) -> None:
        self.write([multicast_group_update(group_id, [], p4runtime_pb2.Update.DELETE)],
                   f"multicast group {group_id}")

    def insert_clone_session(self, session_id: int, replicas: Replicas) -> None:
        self.write([clone_session_update(session_id, replicas)], f"clone session {session_id}")

    def write_register(self, register: str, index: int, value: int) -> None:
        """Set one register cell (int<W> cells take negative values as two's complement)."""
        info = self._p4info().register(register)
        self._check_index("register", register, index, info.size)
        width = self._p4info().register_bitwidth(info)
        if value < 0 and info.type_spec.bitstring.WhichOneof("type_spec") == "int":
            value += 1 << width
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
        cell = update.entity.register_entry
        cell.register_id = info.preamble.id
        cell.index.index = index
        cell.data.bitstring = encode_value(value, width, f"register '{register}'[{index}]")
        self.write([update], f"register '{register}'[{index}]")

    @staticmethod
    def _check_index(kind: str, name: str, index: int, size: int) -> None:
        if not 0 <= index < size:
            raise P4RuntimeError(f"{kind} '{name}' index {index}: expected 0..{size - 1}")

    # -- reads ------------------------------------------------------------------------------
    def read(self, entity: p4runtime_pb2.Entity | Sequence[p4runtime_pb2.Entity],
             what: str = "entities") -> list[p4runtime_pb2.Entity]:
        """Every entity the server returns for this (wildcard) read; several entities are
        read in one RPC (e.g. all tables and all multicast groups at once)."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend([entity] if isinstance(entity, p4runtime_pb2.Entity) else entity)
        out: list[p4runtime_pb2.Entity] = []
        try:
            for reply in self._stub.Read(req, timeout=self.timeout):
                out.extend(reply.entities)
        except grpc.RpcError as exc:
            raise _rpc_failure(f"read {what} on {self.address}", exc) from None
        return out

    def read_table_entries(self, table: str) -> list[p4runtime_pb2.TableEntry]:
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = self._p4info().table(table).preamble.id
        return [e.table_entry for e in self.read(entity, f"table '{table}'")]

    def read_default_entry(self, table: str) -> p4runtime_pb2.TableEntry:
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = self._p4info().table(table).preamble.id
        entity.table_entry.is_default_action = True
        found = self.read(entity, f"default entry of '{table}'")
        if len(found) != 1:
            raise P4RuntimeError(f"default entry of '{table}': got {len(found)} entries, not 1")
        return found[0].table_entry

    def read_direct_counters(self, table: str
                             ) -> list[tuple[p4runtime_pb2.TableEntry, CounterValue]]:
        """(entry, its direct counter) for every entry of ``table``."""
        entity = p4runtime_pb2.Entity()
        entity.direct_counter_entry.table_entry.table_id = \
            self._p4info().table(table).preamble.id
        return [
            (e.direct_counter_entry.table_entry,
             CounterValue(e.direct_counter_entry.data.packet_count,
                          e.direct_counter_entry.data.byte_count))
            for e in self.read(entity, f"direct counters of '{table}'")
        ]

    def read_register(self, register: str, index: int) -> int:
        """One register cell as an unsigned integer."""
        info = self._p4info().register(register)
        self._check_index("register", register, index, info.size)
        entity = p4runtime_pb2.Entity()
        entity.register_entry.register_id = info.preamble.id
        entity.register_entry.index.index = index
        cells = self.read(entity, f"register '{register}'[{index}]")
        if len(cells) != 1:
            raise P4RuntimeError(f"register '{register}'[{index}]: got {len(cells)} cells, not 1")
        return decode_value(cells[0].register_entry.data.bitstring)

    def read_multicast_groups(self) -> dict[int, list[tuple[int, int]]]:
        """Every multicast group: id -> [(egress port, instance), ...]."""
        entity = p4runtime_pb2.Entity()
        entity.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        groups = {}
        for e in self.read(entity, "multicast groups"):
            group = e.packet_replication_engine_entry.multicast_group_entry
            groups[group.multicast_group_id] = [(r.egress_port, r.instance)
                                                for r in group.replicas]
        return groups

    def read_clone_session(self, session_id: int) -> list[tuple[int, int]]:
        """The (egress port, instance) replicas of one clone session."""
        entity = p4runtime_pb2.Entity()
        entity.packet_replication_engine_entry.clone_session_entry.session_id = session_id
        found = self.read(entity, f"clone session {session_id}")
        if len(found) != 1:
            raise P4RuntimeError(f"clone session {session_id}: got {len(found)} entries, not 1")
        session = found[0].packet_replication_engine_entry.clone_session_entry
        return [(r.egress_port, r.instance) for r in session.replicas]

    def read_counters(self, counter: str) -> dict[int, CounterValue]:
        """Every cell of an indexed counter, by index."""
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = self._p4info().counter(counter).preamble.id
        return {
            e.counter_entry.index.index: CounterValue(e.counter_entry.data.packet_count,
                                                      e.counter_entry.data.byte_count)
            for e in self.read(entity, f"counter '{counter}'")
        }

    def read_counter(self, counter: str, index: int) -> CounterValue:
        self._check_index("counter", counter, index, self._p4info().counter(counter).size)
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = self._p4info().counter(counter).preamble.id
        entity.counter_entry.index.index = index
        cells = self.read(entity, f"counter '{counter}'[{index}]")
        if len(cells) != 1:
            raise P4RuntimeError(f"counter '{counter}'[{index}]: got {len(cells)} cells, not 1")
        data = cells[0].counter_entry.data
        return CounterValue(data.packet_count, data.byte_count)


def _rpc_failure(what: str, exc: grpc.RpcError) -> P4RuntimeError:
    """A P4RuntimeError with the gRPC status and each update's P4Runtime error, if sent."""
    errors = _update_errors(exc)
    text = f"{what} failed: {exc.code().name}: {exc.details()}"
    for index, err in enumerate(errors):
        if err.canonical_code != code_pb2.OK:
            text += f"; update {index}: {code_pb2.Code.Name(err.canonical_code)} {err.message}"
    return P4RuntimeError(text, exc.code(), errors)


def _update_errors(exc: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    """The p4.v1.Error per update of a failed Write (from grpc-status-details-bin)."""
    errors = []
    for key, value in exc.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        for detail in status_pb2.Status.FromString(value).details:
            err = p4runtime_pb2.Error()
            if detail.Unpack(err):
                errors.append(err)
    return errors
