"""P4Runtime service of the embedded target (p4runtime 1.4 protos, gRPC).

Covers what the testbed and p4runtime-shell use: arbitration (primary election per device),
Set/GetForwardingPipelineConfig, Write of table entries (incl. default action), multicast groups,
clone sessions, counters and registers, Read of all of those (registers too, which bmv2 lacks)
and Capabilities.  Errors follow the spec: a failed Write answers UNKNOWN with a
google.rpc.Status whose details hold one p4.v1.Error per update.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from emulation.targets.embedded.json_loader import PipelineError
from emulation.targets.embedded.p4info_map import P4InfoMap, TableBinding, bind
from emulation.targets.embedded.pipeline import Program, Switch, load_program
from emulation.targets.embedded.pre import CloneSession
from emulation.targets.embedded.tables import Entry, EntryError

log = logging.getLogger("inart.embedded.p4rt")
API_VERSION = "1.4.1"
U = p4runtime_pb2.Update


def to_int(data: bytes, bits: int, what: str) -> int:
    """Decode a P4Runtime bytestring, checking it fits ``bits``."""
    value = int.from_bytes(data, "big")
    if not data:
        raise EntryError("INVALID_ARGUMENT", f"{what}: empty bytestring")
    if value >> bits:
        raise EntryError("OUT_OF_RANGE", f"{what}: value {value:#x} does not fit {bits} bits")
    return value


def to_bytes(value: int) -> bytes:
    """Canonical bytestring (no leading zero bytes, at least one byte)."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


class ServerState:
    """Pipeline, P4Info binding and arbitration of one device."""

    def __init__(self, switch: Switch, device_id: int, lock: threading.Lock) -> None:
        self.switch = switch
        self.device_id = device_id
        self.lock = lock
        self.map: P4InfoMap | None = None
        self.config: p4runtime_pb2.ForwardingPipelineConfig | None = None
        self.saved: tuple[Program, P4InfoMap, Any] | None = None
        self.streams: dict[int, tuple[int, queue.Queue]] = {}  # stream key -> (election, q)
        self.arb_lock = threading.Lock()

    # ---- arbitration ------------------------------------------------------------------------
    def primary_election(self) -> int | None:
        return max((e for e, _ in self.streams.values()), default=None)

    def notify_all(self) -> None:
        primary = self.primary_election()
        for election, q in self.streams.values():
            q.put(self.arbitration_msg(election, primary))

    def arbitration_msg(self, election: int, primary: int | None) -> Any:
        msg = p4runtime_pb2.StreamMessageResponse()
        arb = msg.arbitration
        arb.device_id = self.device_id
        assert primary is not None
        arb.election_id.high, arb.election_id.low = primary >> 64, primary & ((1 << 64) - 1)
        if election == primary:
            arb.status.code = code_pb2.OK
            arb.status.message = "primary"
        else:
            arb.status.code = code_pb2.ALREADY_EXISTS
            arb.status.message = "backup: a primary with a higher election id exists"
        return msg

    def check_primary(self, election_id: Any, context: grpc.ServicerContext) -> None:
        eid = (election_id.high << 64) | election_id.low
        with self.arb_lock:
            primary = self.primary_election()
        if primary is None or eid != primary:
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"election id {eid} is not the primary's ({primary})")


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """The gRPC service; all state changes take the switch lock the data path also holds."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    # ---- helpers ----------------------------------------------------------------------------
    def check_device(self, device_id: int, context: grpc.ServicerContext) -> None:
        if device_id != self.state.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"device_id {device_id}: this switch is device {self.state.device_id}")

    def need_pipeline(self, context: grpc.ServicerContext) -> P4InfoMap:
        if self.state.map is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                          "no forwarding pipeline config has been set")
        assert self.state.map is not None
        return self.state.map

    # ---- Capabilities -----------------------------------------------------------------------
    def Capabilities(self, request: Any, context: grpc.ServicerContext) -> Any:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    # ---- pipeline config --------------------------------------------------------------------
    def SetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.check_device(request.device_id, context)
        if request.role:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "only the default role is supported")
        self.state.check_primary(request.election_id, context)
        A = p4runtime_pb2.SetForwardingPipelineConfigRequest
        action = request.action
        if action == A.COMMIT:
            if self.state.saved is None:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "COMMIT without a saved config")
            assert self.state.saved is not None
            self.install(*self.state.saved)
            self.state.saved = None
            return p4runtime_pb2.SetForwardingPipelineConfigResponse()
        if action not in (A.VERIFY, A.VERIFY_AND_SAVE, A.VERIFY_AND_COMMIT):
            context.abort(grpc.StatusCode.UNIMPLEMENTED,
                          f"pipeline action {A.Action.Name(action)} is not supported")
        config = request.config
        try:
            program = load_program(config.p4_device_config)
            pmap = bind(config.p4info, program)
        except PipelineError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"pipeline refused: {exc}")
        if action == A.VERIFY_AND_SAVE:
            self.state.saved = (program, pmap, config)
        elif action == A.VERIFY_AND_COMMIT:
            self.install(program, pmap, config)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def install(self, program: Program, pmap: P4InfoMap, config: Any) -> None:
        with self.state.lock:
            self.state.switch.program = program
            self.state.switch.pre.groups.clear()
            self.state.switch.pre.expanded.clear()
            self.state.switch.pre.clones.clear()
            self.state.map = pmap
            stored = p4runtime_pb2.ForwardingPipelineConfig()
            stored.CopyFrom(config)
            self.state.config = stored
        log.info("pipeline installed: %d tables", len(program.tables))

    def GetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.check_device(request.device_id, context)
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        cfg = self.state.config
        if cfg is None:
            return resp
        R = p4runtime_pb2.GetForwardingPipelineConfigRequest
        rt = request.response_type
        resp.config.cookie.CopyFrom(cfg.cookie)
        if rt in (R.ALL, R.P4INFO_AND_COOKIE):
            resp.config.p4info.CopyFrom(cfg.p4info)
        if rt in (R.ALL, R.DEVICE_CONFIG_AND_COOKIE):
            resp.config.p4_device_config = cfg.p4_device_config
        return resp

    # ---- StreamChannel ----------------------------------------------------------------------
    def StreamChannel(self, request_iterator: Iterator[Any], context: grpc.ServicerContext
                      ) -> Iterator[Any]:
        out: queue.Queue = queue.Queue()
        key = id(out)
        state = self.state

        def reader() -> None:
            try:
                for msg in request_iterator:
                    if msg.HasField("arbitration"):
                        self.arbitrate(msg.arbitration, key, out)
                    elif msg.HasField("packet"):
                        out.put(self.stream_error(msg, code_pb2.UNIMPLEMENTED,
                                                  "packet-out needs a CPU port; not supported"))
                    else:
                        log.debug("ignored stream message %s", msg.WhichOneof("update"))
            except grpc.RpcError:
                pass
            finally:
                out.put(None)

        threading.Thread(target=reader, daemon=True, name="p4rt-stream").start()
        try:
            while context.is_active():
                try:
                    item = out.get(timeout=0.5)
                except queue.Empty:
                    continue
                if item is None:
                    break
                if isinstance(item, grpc.StatusCode):
                    context.abort(item, "arbitration refused")
                yield item
        finally:
            with state.arb_lock:
                if key in state.streams:
                    del state.streams[key]
                    if state.streams:
                        state.notify_all()

    def stream_error(self, msg: Any, code: int, text: str) -> Any:
        resp = p4runtime_pb2.StreamMessageResponse()
        resp.error.canonical_code = code
        resp.error.message = text
        resp.error.packet_out.packet_out.CopyFrom(msg.packet)
        return resp

    def arbitrate(self, arb: Any, key: int, out: queue.Queue) -> None:
        state = self.state
        if arb.device_id != state.device_id:
            out.put(grpc.StatusCode.NOT_FOUND)
            return
        if arb.role.name:
            out.put(grpc.StatusCode.UNIMPLEMENTED)
            return
        eid = (arb.election_id.high << 64) | arb.election_id.low
        with state.arb_lock:
            others = [e for k, (e, _) in state.streams.items() if k != key]
            if eid in others:
                out.put(grpc.StatusCode.INVALID_ARGUMENT)
                return
            state.streams[key] = (eid, out)
            state.notify_all()

    # ---- Write ------------------------------------------------------------------------------
    def Write(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.check_device(request.device_id, context)
        if request.role:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "only the default role is supported")
        self.state.check_primary(request.election_id, context)
        pmap = self.need_pipeline(context)
        if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
            context.abort(grpc.StatusCode.UNIMPLEMENTED,
                          "only CONTINUE_ON_ERROR atomicity is supported")
        errors: list[p4runtime_pb2.Error] = []
        failed = False
        with self.state.lock:
            for update in request.updates:
                err = p4runtime_pb2.Error(canonical_code=code_pb2.OK)
                try:
                    self.apply_update(pmap, update)
                except EntryError as exc:
                    failed = True
                    err.canonical_code = code_pb2.Code.Value(exc.code)
                    err.message = str(exc)
                    err.space = "inart-embedded"
                errors.append(err)
        if failed:
            status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failed")
            for err in errors:
                status.details.add().Pack(err)
            context.set_trailing_metadata((("grpc-status-details-bin",
                                            status.SerializeToString()),))
            first = next(e for e in errors if e.canonical_code != code_pb2.OK)
            context.abort(grpc.StatusCode.UNKNOWN, f"Write failed: {first.message}")
        return p4runtime_pb2.WriteResponse()

    def apply_update(self, pmap: P4InfoMap, update: Any) -> None:
        entity = update.entity
        kind = entity.WhichOneof("entity")
        if update.type == U.UNSPECIFIED:
            raise EntryError("INVALID_ARGUMENT", "update type is UNSPECIFIED")
        if kind == "table_entry":
            self.write_table_entry(pmap, update.type, entity.table_entry)
        elif kind == "packet_replication_engine_entry":
            self.write_pre(update.type, entity.packet_replication_engine_entry)
        elif kind == "counter_entry":
            self.write_counter(pmap, update.type, entity.counter_entry)
        elif kind == "direct_counter_entry":
            self.write_direct_counter(pmap, update.type, entity.direct_counter_entry)
        elif kind == "register_entry":
            self.write_register(pmap, update.type, entity.register_entry)
        else:
            raise EntryError("UNIMPLEMENTED", f"entity {kind!r} is not supported")

    def binding(self, pmap: P4InfoMap, table_id: int) -> TableBinding:
        b = pmap.tables.get(table_id)
        if b is None:
            raise EntryError("NOT_FOUND", f"unknown table id {table_id}")
        return b

    def decode_match(self, b: TableBinding, te: Any) -> tuple[Any, ...]:
        given = {}
        for fm in te.match:
            if fm.field_id not in b.field_ids:
                raise EntryError("INVALID_ARGUMENT", f"table {b.table.name!r}: unknown match "
                                                     f"field id {fm.field_id}")
            if fm.field_id in given:
                raise EntryError("INVALID_ARGUMENT", f"match field id {fm.field_id} repeated")
            given[fm.field_id] = fm
        match: list[Any] = []
        for fid, kind, kf in zip(b.field_ids, b.field_types, b.table.keys, strict=True):
            fm = given.get(fid)
            what = f"table {b.table.name!r} field {kf.name!r}"
            full = (1 << kf.width) - 1
            if fm is None:
                if kind == "exact":
                    raise EntryError("INVALID_ARGUMENT", f"{what}: exact match is required")
                match.append({"lpm": (0, 0), "ternary": (0, 0), "optional": (0, 0),
                              "range": (0, full)}[kind])
                continue
            got = fm.WhichOneof("field_match_type")
            if got != kind:
                raise EntryError("INVALID_ARGUMENT", f"{what}: expected {kind} match, got {got}")
            w = kf.width
            if kind == "exact":
                match.append(to_int(fm.exact.value, w, what))
            elif kind == "lpm":
                match.append((to_int(fm.lpm.value, w, what), fm.lpm.prefix_len))
            elif kind == "ternary":
                match.append((to_int(fm.ternary.value, w, what),
                              to_int(fm.ternary.mask, w, what)))
            elif kind == "optional":
                match.append((to_int(fm.optional.value, w, what), full))
            else:
                match.append((to_int(fm.range.low, w, what), to_int(fm.range.high, w, what)))
        return b.table.normalize(tuple(match))

    def decode_action(self, pmap: P4InfoMap, b: TableBinding, te: Any) -> tuple[Any, tuple]:
        which = te.action.WhichOneof("type")
        if which != "action":
            raise EntryError("UNIMPLEMENTED" if which else "INVALID_ARGUMENT",
                             f"table {b.table.name!r}: a direct action is required")
        a = te.action.action
        act = pmap.actions.get(a.action_id)
        if act is None:
            raise EntryError("NOT_FOUND", f"unknown action id {a.action_id}")
        act = b.table.actions.get(act.name)
        if act is None:
            raise EntryError("INVALID_ARGUMENT", f"action id {a.action_id} is not an action of "
                                                 f"table {b.table.name!r}")
        params = {p.param_id: p.value for p in a.params}
        info = pmap.action_infos[a.action_id]
        if set(params) != {p.id for p in info.params} or len(a.params) != len(info.params):
            raise EntryError("INVALID_ARGUMENT", f"action {act.name!r}: expected parameters "
                                                 f"{[p.name for p in info.params]}")
        data = tuple(to_int(params[p.id], p.bitwidth, f"action {act.name!r} param {p.name!r}")
                     for p in info.params)
        return act, data

    def write_table_entry(self, pmap: P4InfoMap, utype: int, te: Any) -> None:
        b = self.binding(pmap, te.table_id)
        table = b.table
        if te.is_default_action:
            if utype != U.MODIFY:
                raise EntryError("INVALID_ARGUMENT", "the default entry can only be MODIFY'd")
            if len(te.match):
                raise EntryError("INVALID_ARGUMENT", "a default entry has no match")
            if te.HasField("action"):
                table.set_default(*self.decode_action(pmap, b, te))
            else:
                if table.default_const:
                    raise EntryError("PERMISSION_DENIED", "default action is const")
                table.reset_default()
            return
        if te.HasField("time_since_last_hit") or te.idle_timeout_ns:
            raise EntryError("UNIMPLEMENTED", "idle timeouts are not supported")
        match = self.decode_match(b, te)
        if not table.needs_priority and te.priority:
            raise EntryError("INVALID_ARGUMENT", f"table {table.name!r} takes no priority")
        if utype == U.INSERT:
            act, data = self.decode_action(pmap, b, te)
            entry = Entry(match, te.priority, act, data)
            table.insert(entry)
            if te.HasField("counter_data"):
                entry.packets, entry.bytes = (te.counter_data.packet_count,
                                              te.counter_data.byte_count)
        elif utype == U.MODIFY:
            table.modify(match, te.priority, *self.decode_action(pmap, b, te))
        else:
            table.delete(match, te.priority)

    def write_pre(self, utype: int, pre_entry: Any) -> None:
        pre = self.state.switch.pre
        which = pre_entry.WhichOneof("type")
        if which == "multicast_group_entry":
            g = pre_entry.multicast_group_entry
            if g.multicast_group_id == 0:
                raise EntryError("INVALID_ARGUMENT", "multicast_group_id 0 is reserved")
            replicas = [(r.egress_port, r.instance) for r in g.replicas]
            if len(set(replicas)) != len(replicas):
                raise EntryError("INVALID_ARGUMENT", "duplicate replica in multicast group")
            exists = g.multicast_group_id in pre.groups
            if utype == U.INSERT and exists:
                raise EntryError("ALREADY_EXISTS", f"group {g.multicast_group_id} exists")
            if utype in (U.MODIFY, U.DELETE) and not exists:
                raise EntryError("NOT_FOUND", f"group {g.multicast_group_id} does not exist")
            if utype == U.DELETE:
                pre.delete_group(g.multicast_group_id)
            else:
                pre.set_group(g.multicast_group_id, replicas)
        elif which == "clone_session_entry":
            c = pre_entry.clone_session_entry
            if c.session_id == 0:
                raise EntryError("INVALID_ARGUMENT", "clone session id 0 is reserved")
            exists = c.session_id in pre.clones
            if utype == U.INSERT and exists:
                raise EntryError("ALREADY_EXISTS", f"clone session {c.session_id} exists")
            if utype in (U.MODIFY, U.DELETE) and not exists:
                raise EntryError("NOT_FOUND", f"clone session {c.session_id} does not exist")
            if utype == U.DELETE:
                del pre.clones[c.session_id]
            else:
                pre.clones[c.session_id] = CloneSession(
                    c.session_id, [(r.egress_port, r.instance) for r in c.replicas],
                    c.class_of_service, c.packet_length_bytes)
        else:
            raise EntryError("INVALID_ARGUMENT", "empty packet_replication_engine_entry")

    def write_counter(self, pmap: P4InfoMap, utype: int, ce: Any) -> None:
        if utype != U.MODIFY:
            raise EntryError("INVALID_ARGUMENT", "counter entries can only be MODIFY'd")
        arr = pmap.counters.get(ce.counter_id)
        if arr is None:
            raise EntryError("NOT_FOUND", f"unknown counter id {ce.counter_id}")
        indices = [ce.index.index] if ce.HasField("index") else list(range(arr.size))
        for i in indices:
            if not 0 <= i < arr.size:
                raise EntryError("OUT_OF_RANGE", f"counter {arr.name!r} index {i} >= {arr.size}")
            arr.packets[i] = ce.data.packet_count
            arr.bytes[i] = ce.data.byte_count

    def write_direct_counter(self, pmap: P4InfoMap, utype: int, dce: Any) -> None:
        if utype != U.MODIFY:
            raise EntryError("INVALID_ARGUMENT", "direct counter entries can only be MODIFY'd")
        b = self.binding(pmap, dce.table_entry.table_id)
        entry = b.table.find(self.decode_match(b, dce.table_entry), dce.table_entry.priority)
        entry.packets, entry.bytes = dce.data.packet_count, dce.data.byte_count

    def write_register(self, pmap: P4InfoMap, utype: int, re: Any) -> None:
        if utype != U.MODIFY:
            raise EntryError("INVALID_ARGUMENT", "register entries can only be MODIFY'd")
        arr = pmap.registers.get(re.register_id)
        if arr is None:
            raise EntryError("NOT_FOUND", f"unknown register id {re.register_id}")
        if re.data.WhichOneof("data") != "bitstring":
            raise EntryError("INVALID_ARGUMENT", "register data must be a bitstring")
        value = to_int(re.data.bitstring, arr.bitwidth, f"register {arr.name!r}")
        indices = [re.index.index] if re.HasField("index") else list(range(arr.size))
        for i in indices:
            if not 0 <= i < arr.size:
                raise EntryError("OUT_OF_RANGE", f"register {arr.name!r} index {i} >= "
                                                 f"{arr.size}")
            arr.values[i] = value

    # ---- Read -------------------------------------------------------------------------------
    def Read(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        self.check_device(request.device_id, context)
        pmap = self.need_pipeline(context)
        resp = p4runtime_pb2.ReadResponse()
        try:
            with self.state.lock:
                for entity in request.entities:
                    for found in self.read_entity(pmap, entity):
                        resp.entities.add().CopyFrom(found)
        except EntryError as exc:
            context.abort(getattr(grpc.StatusCode, exc.code), str(exc))
        yield resp

    def read_entity(self, pmap: P4InfoMap, entity: Any) -> Iterator[Any]:
        kind = entity.WhichOneof("entity")
        if kind == "table_entry":
            yield from self.read_tables(pmap, entity.table_entry)
        elif kind == "packet_replication_engine_entry":
            yield from self.read_pre(entity.packet_replication_engine_entry)
        elif kind == "counter_entry":
            yield from self.read_counters(pmap, entity.counter_entry)
        elif kind == "direct_counter_entry":
            te = entity.direct_counter_entry.table_entry
            for e in self.read_tables(pmap, te, with_counters=True):
                out = p4runtime_pb2.Entity()
                out.direct_counter_entry.table_entry.CopyFrom(e.table_entry)
                out.direct_counter_entry.table_entry.ClearField("counter_data")
                out.direct_counter_entry.data.CopyFrom(e.table_entry.counter_data)
                yield out
        elif kind == "register_entry":
            yield from self.read_registers(pmap, entity.register_entry)
        else:
            raise EntryError("UNIMPLEMENTED", f"reading {kind!r} is not supported")

    def read_tables(self, pmap: P4InfoMap, te: Any, with_counters: bool = False
                    ) -> Iterator[Any]:
        ids = [te.table_id] if te.table_id else list(pmap.tables)
        want_counters = with_counters or te.HasField("counter_data")
        for tid in ids:
            b = self.binding(pmap, tid)
            if te.is_default_action:
                yield self.default_entity(pmap, b)
                continue
            wanted = None
            if len(te.match):
                wanted = (self.decode_match(b, te), te.priority)
            for entry in list(b.table.entries.values()):
                if wanted is not None and b.table.identity(*wanted) != b.table.identity(
                        entry.match, entry.priority):
                    continue
                yield self.entry_entity(pmap, b, entry, want_counters)

    def action_msg(self, pmap: P4InfoMap, msg: Any, act: Any, data: tuple) -> None:
        aid = pmap.action_ids.get(act.name, 0)
        msg.action.action_id = aid
        for i, v in enumerate(data):
            p = msg.action.params.add()
            p.param_id = i + 1
            p.value = to_bytes(v)

    def default_entity(self, pmap: P4InfoMap, b: TableBinding) -> Any:
        out = p4runtime_pb2.Entity()
        t = out.table_entry
        t.table_id = b.info.preamble.id
        t.is_default_action = True
        if b.table.default_action is not None:
            self.action_msg(pmap, t.action, b.table.default_action, b.table.default_data)
        return out

    def entry_entity(self, pmap: P4InfoMap, b: TableBinding, entry: Entry, counters: bool
                     ) -> Any:
        out = p4runtime_pb2.Entity()
        t = out.table_entry
        t.table_id = b.info.preamble.id
        for fid, kind, kf, m in zip(b.field_ids, b.field_types, b.table.keys, entry.match,
                                    strict=True):
            full = (1 << kf.width) - 1
            if kind == "exact":
                t.match.add(field_id=fid).exact.value = to_bytes(m)
            elif kind == "lpm":
                if m[1]:
                    fm = t.match.add(field_id=fid)
                    fm.lpm.value, fm.lpm.prefix_len = to_bytes(m[0]), m[1]
            elif kind == "ternary":
                if m[1]:
                    fm = t.match.add(field_id=fid)
                    fm.ternary.value, fm.ternary.mask = to_bytes(m[0]), to_bytes(m[1])
            elif kind == "optional":
                if m[1]:
                    t.match.add(field_id=fid).optional.value = to_bytes(m[0])
            elif m != (0, full):
                fm = t.match.add(field_id=fid)
                fm.range.low, fm.range.high = to_bytes(m[0]), to_bytes(m[1])
        if b.table.needs_priority:
            t.priority = entry.priority
        self.action_msg(pmap, t.action, entry.action, entry.data)
        if counters and b.table.with_counters:
            t.counter_data.packet_count = entry.packets
            t.counter_data.byte_count = entry.bytes
        return out

    def read_pre(self, pre_entry: Any) -> Iterator[Any]:
        pre = self.state.switch.pre
        which = pre_entry.WhichOneof("type")
        if which == "multicast_group_entry":
            gid = pre_entry.multicast_group_entry.multicast_group_id
            gids = [gid] if gid else sorted(pre.groups)
            for g in gids:
                if g not in pre.groups:
                    raise EntryError("NOT_FOUND", f"group {g} does not exist")
                out = p4runtime_pb2.Entity()
                mg = out.packet_replication_engine_entry.multicast_group_entry
                mg.multicast_group_id = g
                for port, rid in pre.groups[g]:
                    mg.replicas.add(egress_port=port, instance=rid)
                yield out
        elif which == "clone_session_entry":
            sid = pre_entry.clone_session_entry.session_id
            for s in ([sid] if sid else sorted(pre.clones)):
                if s not in pre.clones:
                    raise EntryError("NOT_FOUND", f"clone session {s} does not exist")
                c = pre.clones[s]
                out = p4runtime_pb2.Entity()
                ce = out.packet_replication_engine_entry.clone_session_entry
                ce.session_id, ce.class_of_service = s, c.class_of_service
                ce.packet_length_bytes = c.packet_length_bytes
                for port, rid in c.replicas:
                    ce.replicas.add(egress_port=port, instance=rid)
                yield out
        else:
            raise EntryError("INVALID_ARGUMENT", "empty packet_replication_engine_entry")

    def read_counters(self, pmap: P4InfoMap, ce: Any) -> Iterator[Any]:
        ids = [ce.counter_id] if ce.counter_id else list(pmap.counters)
        for cid in ids:
            arr = pmap.counters.get(cid)
            if arr is None:
                raise EntryError("NOT_FOUND", f"unknown counter id {cid}")
            indices = [ce.index.index] if ce.HasField("index") else range(arr.size)
            for i in indices:
                if not 0 <= i < arr.size:
                    raise EntryError("OUT_OF_RANGE", f"counter index {i} >= {arr.size}")
                out = p4runtime_pb2.Entity()
                c = out.counter_entry
                c.counter_id, c.index.index = cid, i
                c.data.packet_count, c.data.byte_count = arr.packets[i], arr.bytes[i]
                yield out

    def read_registers(self, pmap: P4InfoMap, re: Any) -> Iterator[Any]:
        ids = [re.register_id] if re.register_id else list(pmap.registers)
        for rid in ids:
            arr = pmap.registers.get(rid)
            if arr is None:
                raise EntryError("NOT_FOUND", f"unknown register id {rid}")
            indices = [re.index.index] if re.HasField("index") else range(arr.size)
            for i in indices:
                if not 0 <= i < arr.size:
                    raise EntryError("OUT_OF_RANGE", f"register index {i} >= {arr.size}")
                out = p4runtime_pb2.Entity()
                r = out.register_entry
                r.register_id, r.index.index = rid, i
                r.data.bitstring = to_bytes(arr.values[i])
                yield out


def serve(switch: Switch, device_id: int, address: str, lock: threading.Lock,
          workers: int = 4) -> tuple[grpc.Server, ServerState]:
    """Start the P4Runtime gRPC server on ``address`` (HOST:PORT); returns it running."""
    state = ServerState(switch, device_id, lock)
    # no SO_REUSEPORT: a second switch on the same address must fail, not share the port
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers + 8),
                         options=[("grpc.so_reuseport", 0)])
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(P4RuntimeServicer(state), server)
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError as exc:
        raise OSError(f"cannot listen on {address!r} for P4Runtime: {exc}") from exc
    if bound == 0:
        raise OSError(f"cannot listen on {address!r} for P4Runtime")
    server.start()
    return server, state


def local_device(device_config: bytes, p4info: Any, device_id: int = 0
                 ) -> tuple[Switch, P4RuntimeServicer]:
    """A switch programmed in-process through the same code the gRPC service runs (no sockets);
    used by the benchmark and tests to drive ``Switch.process`` directly."""
    switch = Switch()
    state = ServerState(switch, device_id, threading.Lock())
    servicer = P4RuntimeServicer(state)
    program = load_program(device_config)
    config = p4runtime_pb2.ForwardingPipelineConfig(p4info=p4info,
                                                    p4_device_config=device_config)
    servicer.install(program, bind(p4info, program), config)
    return switch, servicer


def apply_updates(servicer: P4RuntimeServicer, *updates: Any) -> None:
    """Apply Write updates in-process; the first failure raises its EntryError."""
    pmap = servicer.state.map
    assert pmap is not None
    with servicer.state.lock:
        for update in updates:
            servicer.apply_update(pmap, update)
