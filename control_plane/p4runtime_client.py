"""A small P4Runtime client: pipeline push, table and multicast entries, counter reads by name.

Built directly on the ``p4runtime`` package's stubs (p4.v1.p4runtime_pb2[_grpc]) rather than
on p4runtime-shell's global-state API, so a controller, the PTF tests and tools can hold
several clients at once, every RPC has a timeout, and failures raise exceptions (p4runtime-
shell calls ``sys.exit`` on some).  It speaks plain P4Runtime, so it drives bmv2
``simple_switch_grpc`` and the embedded target alike.

Names are the P4Info names (``InaIngress.route_dst``, ``InaIngress.set_next_hop``, ...); a name or
value that does not fit raises P4RuntimeError naming the table, field and what was expected.
"""

from __future__ import annotations

import ipaddress
import queue
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import text_format
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

Value = int | str | bytes
DEFAULT_TIMEOUT_S = 10.0


class P4RuntimeError(RuntimeError):
    """A P4Runtime request failed or could not be built; the message says where and why."""


# ---------------------------------------------------------------------------------------------
# values


def encode_value(value: Value, bitwidth: int, what: str) -> bytes:
    """Encode an int, IPv4 string, MAC string or bytes as P4Runtime's canonical bytestring.

    Canonical = big-endian without leading zero bytes (at least one byte), which P4Runtime
    servers must accept.  ``what`` names the field in error messages.
    """
    if isinstance(value, bytes):
        number = int.from_bytes(value, "big")
    elif isinstance(value, bool):
        raise P4RuntimeError(f"{what}: expected an integer, address or bytes, got a bool")
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str):
        number = _parse_text_value(value, what)
    else:
        raise P4RuntimeError(f"{what}: expected int, str or bytes, got {type(value).__name__}")
    if number < 0 or number >= 1 << bitwidth:
        raise P4RuntimeError(f"{what}: value {value!r} does not fit in {bitwidth} bits")
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def _parse_text_value(text: str, what: str) -> int:
    try:
        if text.count(":") == 5:
            parts = text.split(":")
            if all(len(p) in (1, 2) for p in parts):
                return int("".join(p.zfill(2) for p in parts), 16)
        if text.count(".") == 3:
            return int(ipaddress.IPv4Address(text))
        return int(text, 0)
    except ValueError as exc:
        raise P4RuntimeError(
            f"{what}: cannot parse {text!r} (expected an integer, IPv4 a.b.c.d or MAC "
            f"aa:bb:cc:dd:ee:ff)"
        ) from exc


def decode_value(data: bytes) -> int:
    return int.from_bytes(data, "big")


# ---------------------------------------------------------------------------------------------
# P4Info lookups


class P4Info:
    """Name -> P4Info object lookup with errors that list what exists."""

    def __init__(self, info: p4info_pb2.P4Info):
        self.proto = info
        self.tables = {t.preamble.name: t for t in info.tables}
        self.actions = {a.preamble.name: a for a in info.actions}
        self.counters = {c.preamble.name: c for c in info.counters}
        self.direct_counters = {c.preamble.name: c for c in info.direct_counters}
        self.registers = {r.preamble.name: r for r in info.registers}

    @classmethod
    def from_file(cls, path: str | Path) -> P4Info:
        """Read a P4Info in text format (p4c's ``--p4runtime-files X.txt``)."""
        info = p4info_pb2.P4Info()
        try:
            text_format.Merge(Path(path).read_text(), info)
        except (OSError, text_format.ParseError) as exc:
            raise P4RuntimeError(f"P4Info {path}: cannot read as text-format P4Info: {exc}"
                                 ) from exc
        return cls(info)

    @staticmethod
    def _get(kind: str, table: Mapping, name: str):
        try:
            return table[name]
        except KeyError:
            known = ", ".join(sorted(table)) or "none"
            raise P4RuntimeError(f"unknown {kind} '{name}' (P4Info has: {known})") from None

    def table(self, name: str) -> p4info_pb2.Table:
        return self._get("table", self.tables, name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self._get("action", self.actions, name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._get("counter", self.counters, name)

    def match_field(self, table: p4info_pb2.Table, name: str) -> p4info_pb2.MatchField:
        fields = {f.name: f for f in table.match_fields}
        if name not in fields:
            raise P4RuntimeError(
                f"table '{table.preamble.name}' has no match field '{name}' "
                f"(fields: {', '.join(fields)})"
            )
        return fields[name]

    def action_param(self, action: p4info_pb2.Action, name: str) -> p4info_pb2.Action.Param:
        params = {p.name: p for p in action.params}
        if name not in params:
            raise P4RuntimeError(
                f"action '{action.preamble.name}' has no parameter '{name}' "
                f"(parameters: {', '.join(params) or 'none'})"
            )
        return params[name]

    def table_allows_action(self, table: p4info_pb2.Table, action: p4info_pb2.Action) -> None:
        refs = {r.id: r for r in table.action_refs}
        ref = refs.get(action.preamble.id)
        if ref is None or ref.scope == p4info_pb2.ActionRef.DEFAULT_ONLY:
            allowed = [
                a.preamble.name for a in self.proto.actions
                if a.preamble.id in refs and refs[a.preamble.id].scope
                != p4info_pb2.ActionRef.DEFAULT_ONLY
            ]
            raise P4RuntimeError(
                f"table '{table.preamble.name}' entries cannot use action "
                f"'{action.preamble.name}' (allowed: {', '.join(allowed)})"
            )


# ---------------------------------------------------------------------------------------------
# entries


@dataclass(frozen=True)
class CounterValue:
    packets: int
    bytes: int


def build_table_entry(info: P4Info, table_name: str, match: Mapping[str, object],
                      action_name: str | None = None, params: Mapping[str, Value] | None = None,
                      priority: int = 0) -> p4runtime_pb2.TableEntry:
    """Build a TableEntry from names.  Match values by kind:

    exact: value; lpm: "a.b.c.d/len" or (value, prefix_len); ternary: (value, mask);
    optional: value.  ``action_name`` may be omitted for a delete.
    """
    table = info.table(table_name)
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id, priority=priority)
    needed = {f.name for f in table.match_fields if f.match_type == p4info_pb2.MatchField.EXACT}
    missing = needed - set(match)
    if missing:
        raise P4RuntimeError(
            f"table '{table_name}': exact match field(s) {', '.join(sorted(missing))} missing"
        )
    for name, raw in match.items():
        field = info.match_field(table, name)
        entry.match.append(_field_match(table_name, field, raw))
    if action_name is not None:
        action = info.action(action_name)
        info.table_allows_action(table, action)
        params = dict(params or {})
        declared = [p.name for p in action.params]
        missing = [p for p in declared if p not in params]
        if missing:
            raise P4RuntimeError(
                f"action '{action_name}' in table '{table_name}': parameter(s) "
                f"{', '.join(missing)} missing"
            )
        entry.action.action.action_id = action.preamble.id
        for name, raw in params.items():
            param = info.action_param(action, name)
            entry.action.action.params.add(
                param_id=param.id,
                value=encode_value(raw, param.bitwidth, f"{table_name}/{action_name}.{name}"),
            )
    return entry


def _field_match(table_name: str, field: p4info_pb2.MatchField, raw: object):
    what = f"table '{table_name}' field '{field.name}'"
    fm = p4runtime_pb2.FieldMatch(field_id=field.id)
    kind = field.match_type
    if kind == p4info_pb2.MatchField.EXACT:
        fm.exact.value = encode_value(raw, field.bitwidth, what)  # type: ignore[arg-type]
    elif kind == p4info_pb2.MatchField.LPM:
        if isinstance(raw, str) and "/" in raw:
            addr, _, plen = raw.partition("/")
            value, prefix = _parse_text_value(addr, what), int(plen)
        elif isinstance(raw, tuple) and len(raw) == 2:
            value, prefix = raw[0], int(raw[1])
            value = _parse_text_value(value, what) if isinstance(value, str) else value
        else:
            value, prefix = raw, field.bitwidth
        if not 0 <= prefix <= field.bitwidth:
            raise P4RuntimeError(f"{what}: prefix length {prefix} not in 0..{field.bitwidth}")
        if prefix == 0:
            raise P4RuntimeError(f"{what}: a /0 prefix is a wildcard; set the default instead")
        number = decode_value(encode_value(value, field.bitwidth, what))  # type: ignore[arg-type]
        mask = ((1 << prefix) - 1) << (field.bitwidth - prefix)
        fm.lpm.value = encode_value(number & mask, field.bitwidth, what)
        fm.lpm.prefix_len = prefix
    elif kind == p4info_pb2.MatchField.TERNARY:
        if not (isinstance(raw, tuple) and len(raw) == 2):
            raise P4RuntimeError(f"{what}: ternary match needs (value, mask)")
        mask = decode_value(encode_value(raw[1], field.bitwidth, what))
        value = decode_value(encode_value(raw[0], field.bitwidth, what))
        fm.ternary.value = encode_value(value & mask, field.bitwidth, what)
        fm.ternary.mask = encode_value(mask, field.bitwidth, what)
    elif kind == p4info_pb2.MatchField.OPTIONAL:
        fm.optional.value = encode_value(raw, field.bitwidth, what)  # type: ignore[arg-type]
    else:
        raise P4RuntimeError(f"{what}: match kind {kind} is not supported by this client")
    return fm


# ---------------------------------------------------------------------------------------------
# the client


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
        self._channel = grpc.insecure_channel(address)
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        self._requests: queue.Queue = queue.Queue()
        self._responses: queue.Queue = queue.Queue()
        self._stream = None
        self._reader: threading.Thread | None = None

    # -- session --------------------------------------------------------------------------
    def connect(self) -> P4RuntimeClient:
        """Wait for the server, open the stream and become primary (or raise)."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            raise P4RuntimeError(
                f"P4Runtime server {self.address} not reachable within {self.timeout:.0f} s"
            ) from None
        self._stream = self._stub.StreamChannel(self._request_iter())
        self._reader = threading.Thread(target=self._read_stream, daemon=True)
        self._reader.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.CopyFrom(self.election_id)
        self._requests.put(req)
        reply = self._next_stream_message("arbitration")
        code = reply.arbitration.status.code
        if code != code_pb2.OK:
            raise P4RuntimeError(
                f"{self.address}: not primary for device {self.device_id} "
                f"(election id {self.election_id.high},{self.election_id.low}; status {code}: "
                f"{reply.arbitration.status.message})"
            )
        return self

    def _request_iter(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            item = self._requests.get()
            if item is None:
                return
            yield item

    def _read_stream(self) -> None:
        try:
            for msg in self._stream:
                self._responses.put(msg)
        except grpc.RpcError as exc:
            self._responses.put(exc)

    def _next_stream_message(self, kind: str) -> p4runtime_pb2.StreamMessageResponse:
        while True:
            try:
                msg = self._responses.get(timeout=self.timeout)
            except queue.Empty:
                raise P4RuntimeError(
                    f"{self.address}: no {kind} message on the stream within {self.timeout} s"
                ) from None
            if isinstance(msg, grpc.RpcError):
                raise P4RuntimeError(f"{self.address}: stream closed: {msg.details()}")
            if msg.WhichOneof("update") == kind:
                return msg

    def close(self) -> None:
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
        self._channel.close()

    def __enter__(self) -> P4RuntimeClient:
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- pipeline ---------------------------------------------------------------------------
    def set_pipeline(self, p4info_path: str | Path, device_config_path: str | Path) -> None:
        """Push P4Info + target config (bmv2 JSON); this resets tables, registers, counters."""
        self.info = P4Info.from_file(p4info_path)
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=self.election_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
        )
        req.config.p4info.CopyFrom(self.info.proto)
        req.config.p4_device_config = Path(device_config_path).read_bytes()
        self._call("SetForwardingPipelineConfig", self._stub.SetForwardingPipelineConfig, req)

    def use_p4info(self, p4info_path: str | Path) -> None:
        """Use this P4Info for names without pushing a pipeline (one is already running)."""
        self.info = P4Info.from_file(p4info_path)

    def _p4info(self) -> P4Info:
        if self.info is None:
            raise P4RuntimeError("no P4Info: call set_pipeline() or use_p4info() first")
        return self.info

    # -- writes -------------------------------------------------------------------------------
    def _call(self, what: str, method, request):
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as exc:
            raise P4RuntimeError(f"{what} on {self.address} failed: {_rpc_error_text(exc)}") \
                from None

    def write(self, updates: Sequence[p4runtime_pb2.Update], what: str = "Write") -> None:
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id, election_id=self.election_id)
        req.updates.extend(updates)
        self._call(what, self._stub.Write, req)

    def _entity_update(self, kind, **entity) -> p4runtime_pb2.Update:
        update = p4runtime_pb2.Update(type=kind)
        for name, value in entity.items():
            getattr(update.entity, name).CopyFrom(value)
        return update

    def insert_table_entry(self, table: str, match: Mapping[str, object], action: str,
                           params: Mapping[str, Value] | None = None, priority: int = 0) -> None:
        entry = build_table_entry(self._p4info(), table, match, action, params, priority)
        self.write([self._entity_update(p4runtime_pb2.Update.INSERT, table_entry=entry)],
                   f"insert into '{table}'")

    def modify_table_entry(self, table: str, match: Mapping[str, object], action: str,
                           params: Mapping[str, Value] | None = None, priority: int = 0) -> None:
        entry = build_table_entry(self._p4info(), table, match, action, params, priority)
        self.write([self._entity_update(p4runtime_pb2.Update.MODIFY, table_entry=entry)],
                   f"modify in '{table}'")

    def delete_table_entry(self, table: str, match: Mapping[str, object],
                           priority: int = 0) -> None:
        entry = build_table_entry(self._p4info(), table, match, None, None, priority)
        self.write([self._entity_update(p4runtime_pb2.Update.DELETE, table_entry=entry)],
                   f"delete from '{table}'")

    def insert_multicast_group(self, group_id: int, replicas: Sequence[tuple[int, int]]) -> None:
        """PRE multicast group: replicas are (egress port, instance = egress_rid) pairs."""
        self._multicast(p4runtime_pb2.Update.INSERT, group_id, replicas)

    def delete_multicast_group(self, group_id: int) -> None:
        self._multicast(p4runtime_pb2.Update.DELETE, group_id, [])

    def _multicast(self, kind, group_id: int, replicas: Sequence[tuple[int, int]]) -> None:
        if not 0 < group_id < 1 << 16:
            raise P4RuntimeError(f"multicast group id {group_id}: expected 1..65535")
        pre = p4runtime_pb2.PacketReplicationEngineEntry()
        group = pre.multicast_group_entry
        group.multicast_group_id = group_id
        for port, rid in replicas:
            group.replicas.add(egress_port=port, instance=rid)
        self.write([self._entity_update(kind, packet_replication_engine_entry=pre)],
                   f"multicast group {group_id}")

    # -- reads ------------------------------------------------------------------------------
    def _read(self, entity: p4runtime_pb2.Entity, what: str) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.append(entity)
        out: list[p4runtime_pb2.Entity] = []
        try:
            for reply in self._stub.Read(req, timeout=self.timeout):
                out.extend(reply.entities)
        except grpc.RpcError as exc:
            raise P4RuntimeError(f"read {what} on {self.address} failed: "
                                 f"{_rpc_error_text(exc)}") from None
        return out

    def read_table_entries(self, table: str) -> list[p4runtime_pb2.TableEntry]:
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = self._p4info().table(table).preamble.id
        return [e.table_entry for e in self._read(entity, f"table '{table}'")]

    def read_counters(self, counter: str) -> dict[int, CounterValue]:
        """Every cell of an indexed counter, by index."""
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = self._p4info().counter(counter).preamble.id
        return {
            e.counter_entry.index.index: CounterValue(e.counter_entry.data.packet_count,
                                                      e.counter_entry.data.byte_count)
            for e in self._read(entity, f"counter '{counter}'")
        }

    def read_counter(self, counter: str, index: int) -> CounterValue:
        size = self._p4info().counter(counter).size
        if not 0 <= index < size:
            raise P4RuntimeError(f"counter '{counter}' index {index}: expected 0..{size - 1}")
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = self._p4info().counter(counter).preamble.id
        entity.counter_entry.index.index = index
        cells = self._read(entity, f"counter '{counter}'[{index}]")
        if len(cells) != 1:
            raise P4RuntimeError(f"counter '{counter}'[{index}]: got {len(cells)} cells, not 1")
        data = cells[0].counter_entry.data
        return CounterValue(data.packet_count, data.byte_count)


def _rpc_error_text(exc: grpc.RpcError) -> str:
    """The gRPC status plus each failed update's P4Runtime error, if the server sent them."""
    text = f"{exc.code().name}: {exc.details()}"
    for key, value in exc.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        for index, detail in enumerate(status.details):
            err = p4runtime_pb2.Error()
            if detail.Unpack(err) and err.canonical_code != code_pb2.OK:
                text += f"; update {index}: {code_pb2.Code.Name(err.canonical_code)} {err.message}"
    return text
