"""Test-only stand-in for the SDE's BF Runtime: the subset of ``bfrt_proto`` messages inart's
driver uses (declared here from the public interface's field numbers, so the bytes on the wire
are what bf_switchd would parse) and a fake ``BfRuntime`` gRPC server that records every
request and keeps table entries.  Nothing of the SDE is copied; the real driver imports the
SDE's own ``bfrt_grpc`` outside of tests.
"""

from __future__ import annotations

import json
import types

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.rpc import status_pb2  # noqa: F401  (registers google.rpc.Status in the pool)

from control_plane.drivers.bfrt.sde import BfrtStubs
from tests.drivers.fake_server import FakeServer

F = descriptor_pb2.FieldDescriptorProto
PKG = "bfrt_proto"
OPT, REP = F.LABEL_OPTIONAL, F.LABEL_REPEATED
T = {"u32": F.TYPE_UINT32, "i32": F.TYPE_INT32, "bytes": F.TYPE_BYTES, "str": F.TYPE_STRING,
     "bool": F.TYPE_BOOL, "float": F.TYPE_FLOAT, "enum": F.TYPE_ENUM, "msg": F.TYPE_MESSAGE}

# message -> [(field, number, type, label, type name or None, oneof index or None)]
MESSAGES: dict[str, list] = {
    "TargetDevice": [("device_id", 1, "u32"), ("pipe_id", 2, "u32"), ("direction", 3, "u32"),
                     ("prsr_id", 4, "u32")],
    "WriteRequest": [("target", 1, "msg", OPT, "TargetDevice"), ("client_id", 2, "u32"),
                     ("updates", 3, "msg", REP, "Update"), ("atomicity", 4, "u32"),
                     ("p4_name", 5, "str")],
    "WriteResponse": [],
    "ReadRequest": [("target", 1, "msg", OPT, "TargetDevice"), ("client_id", 2, "u32"),
                    ("entities", 3, "msg", REP, "Entity"), ("p4_name", 4, "str")],
    "ReadResponse": [("entities", 1, "msg", REP, "Entity")],
    "Update": [("type", 1, "enum", OPT, "Update.Type"), ("entity", 2, "msg", OPT, "Entity")],
    "Entity": [("table_entry", 1, "msg", OPT, "TableEntry", 0)],
    "TableEntry": [("table_id", 1, "u32"), ("key", 2, "msg", OPT, "TableKey", 0),
                   ("data", 3, "msg", OPT, "TableData"), ("is_default_entry", 4, "bool")],
    "TableData": [("action_id", 1, "u32"), ("fields", 2, "msg", REP, "DataField")],
    "DataField": [("field_id", 1, "u32"), ("stream", 2, "bytes", OPT, None, 0),
                  ("float_val", 3, "float", OPT, None, 0), ("str_val", 4, "str", OPT, None, 0),
                  ("int_arr_val", 5, "msg", OPT, "DataField.IntArray", 0),
                  ("bool_arr_val", 6, "msg", OPT, "DataField.BoolArray", 0),
                  ("bool_val", 8, "bool", OPT, None, 0)],
    "DataField.IntArray": [("val", 1, "u32", REP)],
    "DataField.BoolArray": [("val", 1, "bool", REP)],
    "TableKey": [("fields", 1, "msg", REP, "KeyField")],
    "KeyField": [("field_id", 1, "u32"), ("exact", 2, "msg", OPT, "KeyField.Exact", 0),
                 ("ternary", 3, "msg", OPT, "KeyField.Ternary", 0),
                 ("lpm", 4, "msg", OPT, "KeyField.LPM", 0)],
    "KeyField.Exact": [("value", 1, "bytes")],
    "KeyField.Ternary": [("value", 1, "bytes"), ("mask", 2, "bytes")],
    "KeyField.LPM": [("value", 1, "bytes"), ("prefix_len", 2, "i32")],
    "StreamMessageRequest": [("client_id", 1, "u32"),
                             ("subscribe", 2, "msg", OPT, "Subscribe", 0)],
    "StreamMessageResponse": [("subscribe", 1, "msg", OPT, "Subscribe", 0)],
    "Subscribe": [("is_master", 1, "bool"), ("device_id", 2, "u32"),
                  ("notifications", 3, "msg", OPT, "Subscribe.Notifications"),
                  ("status", 4, "msg", OPT, ".google.rpc.Status")],
    "Subscribe.Notifications": [("enable_learn_notifications", 1, "bool"),
                                ("enable_idletimeout_notifications", 2, "bool"),
                                ("enable_port_status_change_notifications", 3, "bool")],
    "SetForwardingPipelineConfigRequest": [
        ("device_id", 1, "u32"), ("client_id", 2, "u32"),
        ("action", 3, "enum", OPT, "SetForwardingPipelineConfigRequest.Action"),
        ("dev_init_mode", 4, "u32"), ("base_path", 5, "str"),
        ("config", 6, "msg", REP, "ForwardingPipelineConfig")],
    "SetForwardingPipelineConfigResponse": [],
    "ForwardingPipelineConfig": [("p4_name", 1, "str"), ("bfruntime_info", 2, "bytes"),
                                 ("profiles", 3, "msg", REP, "ForwardingPipelineConfig.Profile")],
    "ForwardingPipelineConfig.Profile": [("profile_name", 1, "str"), ("context", 2, "bytes"),
                                         ("binary", 3, "bytes"), ("pipe_scope", 4, "u32", REP)],
    "NonP4Config": [("bfruntime_info", 1, "bytes")],
    "GetForwardingPipelineConfigRequest": [("device_id", 1, "u32"), ("client_id", 2, "u32")],
    "GetForwardingPipelineConfigResponse": [
        ("config", 1, "msg", REP, "ForwardingPipelineConfig"),
        ("non_p4_config", 2, "msg", OPT, "NonP4Config")],
}
ENUMS = {"Update.Type": ["UNSPECIFIED", "INSERT", "MODIFY", "MODIFY_INC", "DELETE"],
         "SetForwardingPipelineConfigRequest.Action": [
             "BIND", "VERIFY", "VERIFY_AND_WARM_INIT_BEGIN",
             "VERIFY_AND_WARM_INIT_BEGIN_AND_END", "WARM_INIT_END"]}


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="inart_test_bfruntime_subset.proto",
                                            package=PKG, syntax="proto3",
                                            dependency=["google/rpc/status.proto"])
    protos: dict[str, descriptor_pb2.DescriptorProto] = {}
    for name in MESSAGES:  # parents first: "A" comes before "A.B" in the table
        parent, _, leaf = name.rpartition(".")
        protos[name] = (protos[parent].nested_type if parent else fd.message_type).add(
            name=leaf)
    for name, values in ENUMS.items():
        parent, _, leaf = name.rpartition(".")
        enum = protos[parent].enum_type.add(name=leaf)
        for i, v in enumerate(values):
            enum.value.add(name=v, number=i)
    for name, fields in MESSAGES.items():
        msg = protos[name]
        if any(len(f) > 5 and f[5] is not None for f in fields):
            msg.oneof_decl.add(name="value")
        for spec in fields:
            fname, number, ftype = spec[:3]
            label = spec[3] if len(spec) > 3 else OPT
            type_name = spec[4] if len(spec) > 4 else None
            f = msg.field.add(name=fname, number=number, type=T[ftype], label=label)
            if type_name:
                f.type_name = type_name if type_name.startswith(".") else f".{PKG}.{type_name}"
            if len(spec) > 5 and spec[5] is not None:
                f.oneof_index = spec[5]
    return fd


def _modules() -> tuple[types.ModuleType, types.ModuleType]:
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName("inart_test_bfruntime_subset.proto")
    except KeyError:
        pool.Add(_build_file())
    pb2 = types.ModuleType("bfruntime_pb2")
    for name in MESSAGES:
        if "." not in name:
            setattr(pb2, name, message_factory.GetMessageClass(
                pool.FindMessageTypeByName(f"{PKG}.{name}")))
    svc = types.ModuleType("bfruntime_pb2_grpc")

    class BfRuntimeStub:
        def __init__(self, channel: grpc.Channel) -> None:
            def m(kind, name, req, resp):
                return getattr(channel, kind)(f"/{PKG}.BfRuntime/{name}",
                                              request_serializer=req.SerializeToString,
                                              response_deserializer=resp.FromString)
            self.Write = m("unary_unary", "Write", pb2.WriteRequest, pb2.WriteResponse)
            self.Read = m("unary_stream", "Read", pb2.ReadRequest, pb2.ReadResponse)
            self.SetForwardingPipelineConfig = m(
                "unary_unary", "SetForwardingPipelineConfig",
                pb2.SetForwardingPipelineConfigRequest, pb2.SetForwardingPipelineConfigResponse)
            self.GetForwardingPipelineConfig = m(
                "unary_unary", "GetForwardingPipelineConfig",
                pb2.GetForwardingPipelineConfigRequest, pb2.GetForwardingPipelineConfigResponse)
            self.StreamChannel = m("stream_stream", "StreamChannel", pb2.StreamMessageRequest,
                                   pb2.StreamMessageResponse)

    svc.BfRuntimeStub = BfRuntimeStub
    return pb2, svc


PB2, GRPC = _modules()
STUBS = BfrtStubs(PB2, GRPC, origin=__import__("pathlib").Path(__file__))

# the fixed tables bf_switchd describes in its non-P4 bfrt.json (ids are the fake's own)
NON_P4 = {"tables": [
    {"name": "$PORT", "id": 7001,
     "key": [{"id": 1, "name": "$DEV_PORT", "match_type": "Exact", "type": {"type": "uint32"}}],
     "data": [{"singleton": {"id": 1, "name": "$SPEED", "type": {"type": "string"}}},
              {"singleton": {"id": 2, "name": "$FEC", "type": {"type": "string"}}},
              {"singleton": {"id": 3, "name": "$PORT_ENABLE", "type": {"type": "bool"}}},
              {"singleton": {"id": 4, "name": "$AUTO_NEGOTIATION",
                             "type": {"type": "string"}}}]},
    {"name": "$PORT_STR_INFO", "id": 7002,
     "key": [{"id": 1, "name": "$PORT_NAME", "match_type": "Exact", "type": {"type": "string"}}],
     "data": [{"singleton": {"id": 1, "name": "$DEV_PORT", "type": {"type": "uint32"}}}]},
    {"name": "$pre.node", "id": 7003,
     "key": [{"id": 1, "name": "$MULTICAST_NODE_ID", "match_type": "Exact",
              "type": {"type": "uint32"}}],
     "data": [{"singleton": {"id": 1, "name": "$MULTICAST_RID", "type": {"type": "uint16"}}},
              {"singleton": {"id": 2, "name": "$MULTICAST_LAG_ID", "type": {"type": "int_arr"}}},
              {"singleton": {"id": 3, "name": "$DEV_PORT", "type": {"type": "int_arr"}}}]},
    {"name": "$pre.mgid", "id": 7004,
     "key": [{"id": 1, "name": "$MGID", "match_type": "Exact", "type": {"type": "uint16"}}],
     "data": [{"singleton": {"id": 1, "name": "$MULTICAST_NODE_ID",
                             "type": {"type": "int_arr"}}},
              {"singleton": {"id": 2, "name": "$MULTICAST_NODE_L1_XID_VALID",
                             "type": {"type": "bool_arr"}}},
              {"singleton": {"id": 3, "name": "$MULTICAST_NODE_L1_XID",
                             "type": {"type": "int_arr"}}}]},
]}


class FakeBfRuntime(FakeServer):
    """A BfRuntime server: records requests, keeps entries by (table, key), answers
    ``$PORT_STR_INFO`` reads from ``fronts`` (name -> dev port) and other tables from what it
    keeps (a key-less read lists a table); ``fail_after`` makes the Write that would exceed
    that many stored entries fail, ``fail_deletes_after`` the DELETE after that many (for
    rollback tests).  ``program`` is the loaded program's name (set by a push)."""

    def __init__(self, fronts: dict[str, int] | None = None, fail_after: int | None = None,
                 fail_deletes_after: int | None = None):
        super().__init__()
        self.fronts = fronts or {}
        self.fail_after = fail_after
        self.fail_deletes_after = fail_deletes_after
        self.deletes = 0
        self.program: str | None = None
        self.entries: dict[tuple, object] = {}
        handlers = {
            "Write": grpc.unary_unary_rpc_method_handler(
                self._write, PB2.WriteRequest.FromString, PB2.WriteResponse.SerializeToString),
            "Read": grpc.unary_stream_rpc_method_handler(
                self._read, PB2.ReadRequest.FromString, PB2.ReadResponse.SerializeToString),
            "SetForwardingPipelineConfig": grpc.unary_unary_rpc_method_handler(
                self._set, PB2.SetForwardingPipelineConfigRequest.FromString,
                PB2.SetForwardingPipelineConfigResponse.SerializeToString),
            "GetForwardingPipelineConfig": grpc.unary_unary_rpc_method_handler(
                self._get, PB2.GetForwardingPipelineConfigRequest.FromString,
                PB2.GetForwardingPipelineConfigResponse.SerializeToString),
            "StreamChannel": grpc.stream_stream_rpc_method_handler(
                self._stream, PB2.StreamMessageRequest.FromString,
                PB2.StreamMessageResponse.SerializeToString),
        }
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(f"{PKG}.BfRuntime", handlers),))
        self.listen()

    @staticmethod
    def _key(te) -> tuple:
        return (te.table_id, te.key.SerializeToString(deterministic=True))

    def _write(self, req, ctx):
        with self.lock:
            self.requests.append(req)
            for up in req.updates:
                te = up.entity.table_entry
                if up.type == PB2.Update.INSERT:
                    if self.fail_after is not None and len(self.entries) >= self.fail_after:
                        ctx.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "table full (fake)")
                    if self._key(te) in self.entries:
                        ctx.abort(grpc.StatusCode.ALREADY_EXISTS, "entry exists (fake)")
                    self.entries[self._key(te)] = te
                elif up.type == PB2.Update.DELETE:
                    if self.fail_deletes_after is not None and \
                            self.deletes >= self.fail_deletes_after:
                        ctx.abort(grpc.StatusCode.INTERNAL, "delete failed (fake)")
                    if self.entries.pop(self._key(te), None) is None:
                        ctx.abort(grpc.StatusCode.NOT_FOUND, "no such entry (fake)")
                    self.deletes += 1
        return PB2.WriteResponse()

    def _read(self, req, ctx):
        self.requests.append(req)
        for ent in req.entities:
            te = ent.table_entry
            if te.table_id == 7002:
                name = te.key.fields[0].exact.value.decode()
                if name not in self.fronts:
                    ctx.abort(grpc.StatusCode.NOT_FOUND, f"no port {name}")
                out = PB2.TableEntry(table_id=7002)
                out.key.CopyFrom(te.key)
                out.data.fields.add(field_id=1, stream=self.fronts[name].to_bytes(4, "big"))
                yield PB2.ReadResponse(entities=[PB2.Entity(table_entry=out)])
            elif not te.key.fields:
                with self.lock:
                    found = [e for e in self.entries.values() if e.table_id == te.table_id]
                yield PB2.ReadResponse(entities=[PB2.Entity(table_entry=e) for e in found])

    def _set(self, req, ctx):
        self.requests.append(req)
        if req.action == req.VERIFY_AND_WARM_INIT_BEGIN_AND_END:
            self.entries.clear()
            self.program = req.config[0].p4_name
        elif req.action == req.BIND and req.config[0].p4_name != self.program:
            ctx.abort(grpc.StatusCode.NOT_FOUND, "no such program (fake)")
        return PB2.SetForwardingPipelineConfigResponse()

    def _get(self, req, ctx):
        self.requests.append(req)
        resp = PB2.GetForwardingPipelineConfigResponse(
            non_p4_config=PB2.NonP4Config(bfruntime_info=json.dumps(NON_P4).encode()))
        if self.program:
            resp.config.add(p4_name=self.program)
        return resp

    def _stream(self, requests, ctx):
        for req in requests:
            self.requests.append(req)
            if req.HasField("subscribe"):
                resp = PB2.StreamMessageResponse()
                resp.subscribe.device_id = req.subscribe.device_id
                resp.subscribe.status.code = 0
                yield resp
