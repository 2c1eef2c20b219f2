"""Test-only stand-in for the SDE's BF Runtime: the subset of ``bfrt_proto`` messages inart's
driver uses (declared here from bfruntime.proto's field numbers and oneof names, so the bytes
on the wire are what bf_switchd would parse) and a fake ``BfRuntime`` gRPC server that records
every request, keeps table entries and checks each one against the schemas as bf_switchd has
them: the program's bfrt.json (from the push) and the device's fixed tables as the SDE
defines them (their shape, written from open-p4studio: tests/drivers/data/), and against the
rules bf_switchd's port and PRE table code adds (a port add needs speed and FEC; a
multicast group's lists are of one length and name existing nodes of no other group).  Like
bf_switchd it answers a Write or Read with refused entries UNKNOWN "Write Error Status" with
one ``bfrt_proto.Error`` per update packed in the status details, and counters from its last
hardware sync unless a Read asks ``from_hw``.  No SDE code is copied; the real driver imports
the SDE's own ``bfrt_grpc`` outside of tests.
"""

from __future__ import annotations

import json
import os
import types
from pathlib import Path

import grpc
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.rpc import code_pb2, status_pb2

from control_plane.drivers.bfrt.sde import BfrtStubs, load_stubs
from tests.drivers.fake_server import FakeServer

F = descriptor_pb2.FieldDescriptorProto
PKG = "bfrt_proto"
OPT, REP = F.LABEL_OPTIONAL, F.LABEL_REPEATED
T = {"u32": F.TYPE_UINT32, "i32": F.TYPE_INT32, "bytes": F.TYPE_BYTES, "str": F.TYPE_STRING,
     "bool": F.TYPE_BOOL, "float": F.TYPE_FLOAT, "enum": F.TYPE_ENUM, "msg": F.TYPE_MESSAGE}

# message -> [(field, number, type, label, type name or None, oneof name or None)]
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
    "Entity": [("table_entry", 1, "msg", OPT, "TableEntry", "entity")],
    "TableEntry": [("table_id", 1, "u32"), ("key", 2, "msg", OPT, "TableKey", "value"),
                   ("data", 3, "msg", OPT, "TableData"), ("is_default_entry", 4, "bool"),
                   ("table_read_flag", 5, "msg", OPT, "TableReadFlag"),
                   ("table_flags", 9, "msg", OPT, "TableFlags")],
    "TableReadFlag": [("from_hw", 1, "bool")],
    "TableFlags": [("from_hw", 1, "bool"), ("key_only", 2, "bool"), ("mod_del", 3, "bool"),
                   ("reset_ttl", 4, "bool"), ("reset_stats", 5, "bool")],
    "TableData": [("action_id", 1, "u32"), ("fields", 2, "msg", REP, "DataField")],
    "DataField": [("field_id", 1, "u32"), ("stream", 2, "bytes", OPT, None, "value"),
                  ("float_val", 3, "float", OPT, None, "value"),
                  ("str_val", 4, "str", OPT, None, "value"),
                  ("int_arr_val", 5, "msg", OPT, "DataField.IntArray", "value"),
                  ("bool_arr_val", 6, "msg", OPT, "DataField.BoolArray", "value"),
                  ("bool_val", 8, "bool", OPT, None, "value"),
                  ("str_arr_val", 9, "msg", OPT, "DataField.StrArray", "value")],
    "DataField.IntArray": [("val", 1, "u32", REP)],
    "DataField.BoolArray": [("val", 1, "bool", REP)],
    "DataField.StrArray": [("val", 1, "str", REP)],
    "TableKey": [("fields", 1, "msg", REP, "KeyField")],
    "KeyField": [("field_id", 1, "u32"),
                 ("exact", 2, "msg", OPT, "KeyField.Exact", "match_type"),
                 ("ternary", 3, "msg", OPT, "KeyField.Ternary", "match_type"),
                 ("lpm", 4, "msg", OPT, "KeyField.LPM", "match_type")],
    "KeyField.Exact": [("value", 1, "bytes")],
    "KeyField.Ternary": [("value", 1, "bytes"), ("mask", 2, "bytes")],
    "KeyField.LPM": [("value", 1, "bytes"), ("prefix_len", 2, "i32")],
    "StreamMessageRequest": [("client_id", 1, "u32"),
                             ("subscribe", 2, "msg", OPT, "Subscribe", "update")],
    "StreamMessageResponse": [("subscribe", 1, "msg", OPT, "Subscribe", "update")],
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
    "Error": [("canonical_code", 1, "i32"), ("message", 2, "str"), ("space", 3, "str"),
              ("code", 4, "i32")],
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
        oneofs = list(dict.fromkeys(f[5] for f in fields if len(f) > 5 and f[5]))
        for oneof in oneofs:
            msg.oneof_decl.add(name=oneof)
        for spec in fields:
            fname, number, ftype = spec[:3]
            label = spec[3] if len(spec) > 3 else OPT
            type_name = spec[4] if len(spec) > 4 else None
            f = msg.field.add(name=fname, number=number, type=T[ftype], label=label)
            if type_name:
                f.type_name = type_name if type_name.startswith(".") else f".{PKG}.{type_name}"
            if len(spec) > 5 and spec[5]:
                f.oneof_index = oneofs.index(spec[5])
    return fd


def _modules() -> tuple[types.ModuleType, types.ModuleType]:
    # a pool of its own: stubs generated from the SDE's bfruntime.proto (same message names)
    # can then be loaded beside it, to drive this fake with them
    pool = descriptor_pool.DescriptorPool()
    for dep in (any_pb2, status_pb2):
        fdp = descriptor_pb2.FileDescriptorProto()
        dep.DESCRIPTOR.CopyToProto(fdp)
        pool.Add(fdp)
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


def write_stub_package(pkg: Path) -> None:
    """A ``bfrt_grpc`` package at ``pkg`` that re-exports this fake's messages and stub, where
    an SDE has protoc's output: for tests of how the driver finds and loads the SDE's stubs."""
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "bfruntime_pb2.py").write_text("from tests.drivers.bfrt_fake import PB2\n"
                                          "globals().update(vars(PB2))\n")
    (pkg / "bfruntime_pb2_grpc.py").write_text("from tests.drivers.bfrt_fake import GRPC\n"
                                               "BfRuntimeStub = GRPC.BfRuntimeStub\n")


def stubs_for_tests(env: dict[str, str] | None = None) -> BfrtStubs:
    """The stubs the driver tests drive the fake with: this module's declared subset, or the
    ``bfrt_grpc`` package in the folder ``$INART_TEST_BFRT_GRPC`` names (an SDE's
    ``lib/python3.X/site-packages/tofino``, or stubs regenerated from its bfruntime.proto),
    so that the driver is tested with the messages bf_switchd itself parses.  The fake
    answers either: it reads the bytes on the wire with its own subset."""
    env = dict(os.environ) if env is None else env
    folder = env.get("INART_TEST_BFRT_GRPC")
    if folder:
        return load_stubs({"INART_BFRT_GRPC": folder})
    return BfrtStubs(PB2, GRPC, origin=Path(__file__))


STUBS = stubs_for_tests()

# the fixed tables bf_switchd describes in its non-P4 bfrt.json, as the SDE defines them (data/)
FIXED_JSON = Path(__file__).parent / "data" / "bfrt_fixed_tf1.json"
NON_P4 = json.loads(FIXED_JSON.read_text())
FIXED = {t["name"]: t for t in NON_P4["tables"]}
PORT_ID, PORT_STR_INFO_ID = FIXED["$PORT"]["id"], FIXED["$PORT_STR_INFO"]["id"]
NODE_ID, MGID_ID = FIXED["$pre.node"]["id"], FIXED["$pre.mgid"]["id"]
WIDTHS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
# what bf_switchd requires of an add (bf_rt_port_table_impl.cpp: a port add needs both speed
# and FEC).  A schema's 'mandatory' is not enforced: bf_switchd leaves such a field unset
# when an entry omits it (bf_rt_p4_table_data_impl.hpp), and open-p4studio's own tna_mirror
# test adds a $pre.node without its mandatory $MULTICAST_LAG_ID
REQUIRED_ON_INSERT = {"$PORT": ("$SPEED", "$FEC")}
# a $pre.mgid entry's lists that go by position (bf_rt_pre_table_impl.cpp checks their sizes)
MGID_LISTS = (("$MULTICAST_NODE_ID", "$MULTICAST_NODE_L1_XID", "$MULTICAST_NODE_L1_XID_VALID"),
              ("$MULTICAST_ECMP_ID", "$MULTICAST_ECMP_L1_XID", "$MULTICAST_ECMP_L1_XID_VALID"))


class Refused(Exception):
    """One update or read bf_switchd refuses: a gRPC code and its message."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def _fields(raw: list) -> dict[int, dict]:
    """id -> field of a schema's key or data list (data fields unwrapped from 'singleton')."""
    return {d.get("singleton", d)["id"]: d.get("singleton", d) for d in raw}


def _nbytes(f: dict) -> int:
    t = f["type"]
    return (int(t.get("width", WIDTHS.get(t["type"], 0))) + 7) // 8


def check_entry(table: dict, te, insert: bool) -> None:
    """Refuse ``te`` as bf_switchd would where it does not fit ``table``'s schema."""
    name = table["name"]
    keys = _fields(table["key"])
    got = {kf.field_id: kf for kf in te.key.fields}
    if set(got) != set(keys):
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                      f"{name}: key fields {sorted(got)}, expected {sorted(keys)} (fake)")
    for fid, kf in got.items():
        k = keys[fid]
        kind = kf.WhichOneof("match_type")
        if kind != k["match_type"].lower():
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                          f"{name} {k['name']}: {kind} match, expected {k['match_type']} (fake)")
        if k["type"]["type"] != "string" and len(getattr(kf, kind).value) != _nbytes(k):
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                          f"{name} {k['name']}: {len(getattr(kf, kind).value)} bytes, "
                          f"expected {_nbytes(k)} (fake)")
    if not insert:
        return
    if "action_specs" in table and table["action_specs"]:
        action = next((a for a in table["action_specs"] if a["id"] == te.data.action_id), None)
        if action is None:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                          f"{name}: no action id {te.data.action_id} (fake)")
        schema = _fields(action["data"])
    else:
        schema = _fields(table.get("data", []))
    seen = set()
    for df in te.data.fields:
        f = schema.get(df.field_id)
        if f is None:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                          f"{name}: no data field id {df.field_id} (fake)")
        seen.add(df.field_id)
        _check_value(name, f, df)
    missing = [f["name"] for fid, f in schema.items()
               if fid not in seen and f["name"] in REQUIRED_ON_INSERT.get(name, ())]
    if missing:
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                      f"{name}: an add needs {', '.join(missing)} (fake)")


def _check_value(table: str, f: dict, df) -> None:
    """The value case the field's type and 'repeated' call for, and its size or choice."""
    kind = f["type"]["type"]
    if f.get("repeated"):
        want = {"bool": "bool_arr_val", "string": "str_arr_val"}.get(kind, "int_arr_val")
    else:
        want = {"bool": "bool_val", "string": "str_val", "float": "float_val"}.get(kind,
                                                                                   "stream")
    have = df.WhichOneof("value")
    if have != want:
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                      f"{table} {f['name']}: {have} for a {'repeated ' * bool(f.get('repeated'))}"
                      f"{kind} field, expected {want} (fake)")
    if want == "stream" and len(df.stream) != _nbytes(f):
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                      f"{table} {f['name']}: {len(df.stream)} bytes, expected {_nbytes(f)} "
                      f"(fake)")
    if want == "str_val" and f["type"].get("choices") and df.str_val not in f["type"]["choices"]:
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                      f"{table} {f['name']}: {df.str_val!r} is not a choice (fake)")


def _exact(te) -> int:
    """The integer of a one-field exact key (the PRE tables' ids)."""
    return int.from_bytes(te.key.fields[0].exact.value, "big")


def error_status(message: str, errors: dict[int, Refused]) -> bytes:
    """A google.rpc.Status as bf_switchd sends it for a batch: UNKNOWN, then one packed
    ``bfrt_proto.Error`` per update up to the last refused one (OK for the others)."""
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message=message)
    for index in range(max(errors) + 1):
        refused = errors.get(index)
        err = PB2.Error(canonical_code=refused.code.value[0] if refused else 0,
                        message=refused.message if refused else "")
        status.details.append(any_pb2.Any())
        status.details[-1].Pack(err)
    return status.SerializeToString()


class FakeBfRuntime(FakeServer):
    """A BfRuntime server: records requests, keeps entries by (table, key) and checks each against
    the schemas, answers ``$PORT_STR_INFO`` reads from ``fronts`` (name -> dev port) and
    other tables from what it keeps (a key-less read lists a table). ``counters`` is the
    hardware's counter cells ((table id, index) -> (packets, bytes)); a counter read
    answers the values of the last read with ``from_hw``, as bf_switchd answers its
    software state. A push keeps the ports, and adding an added port succeeds without
    changing it, as bf_switchd's port manager does. ``fail_after`` makes each INSERT past
    that many stored entries fail, ``fail_deletes_after`` each DELETE after that many (for
    rollback tests). Writes go on past a refused update, as bf_switchd's default
    CONTINUE_ON_ERROR batches do. ``program`` is the loaded program's name (set by a push)."""

    def __init__(self, fronts: dict[str, int] | None = None, fail_after: int | None = None,
                 fail_deletes_after: int | None = None):
        super().__init__()
        self.fronts = fronts or {}
        self.fail_after = fail_after
        self.fail_deletes_after = fail_deletes_after
        self.deletes = 0
        self.groups: dict[int, int] = {}  # $pre.node id -> the $MGID whose group holds it
        self.program: str | None = None
        self.schema: dict[int, dict] = {t["id"]: t for t in NON_P4["tables"]}
        self.entries: dict[tuple, object] = {}
        self.counters: dict[tuple[int, int], tuple[int, int]] = {}
        self.synced: dict[tuple[int, int], tuple[int, int]] = {}
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

    def _program_of(self, req, ctx) -> None:
        """bf_switchd resolves a request's program by its p4_name (no BIND here)."""
        if not req.p4_name or req.p4_name != self.program:
            ctx.abort(grpc.StatusCode.NOT_FOUND,
                      f"Unable to obtain BF_RT info for ({req.p4_name}) (fake)")

    def _update(self, up) -> None:
        te = up.entity.table_entry
        table = self.schema.get(te.table_id)
        if table is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"no table id {te.table_id} (fake)")
        check_entry(table, te, up.type == PB2.Update.INSERT)
        if up.type == PB2.Update.INSERT:
            if self.fail_after is not None and len(self.entries) >= self.fail_after:
                raise Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, "table full (fake)")
            if self._key(te) in self.entries:
                if te.table_id == PORT_ID:
                    return  # bf_switchd's port manager takes an added port's add as done
                raise Refused(grpc.StatusCode.ALREADY_EXISTS, "entry exists (fake)")
            if te.table_id == MGID_ID:
                self._join_group(te)
            self.entries[self._key(te)] = te
        elif up.type == PB2.Update.DELETE:
            if self.fail_deletes_after is not None and self.deletes >= self.fail_deletes_after:
                raise Refused(grpc.StatusCode.INTERNAL, "delete failed (fake)")
            if self.entries.pop(self._key(te), None) is None:
                raise Refused(grpc.StatusCode.NOT_FOUND, "no such entry (fake)")
            self.deletes += 1
            if te.table_id == NODE_ID:  # a deleted node leaves its group
                self.groups.pop(_exact(te), None)
            elif te.table_id == MGID_ID:  # a deleted group frees its nodes
                self.groups = {n: g for n, g in self.groups.items() if g != _exact(te)}

    def _join_group(self, te) -> None:
        """A new group's members, checked as bf_switchd's PRE table and multicast manager
        check them: lists of one length, nodes that exist and belong to no other group."""
        names = {d["singleton"]["id"]: d["singleton"]["name"] for d in FIXED["$pre.mgid"]["data"]}
        lists = {names[df.field_id]: list(getattr(df, df.WhichOneof("value")).val)
                 for df in te.data.fields}
        for group in MGID_LISTS:
            sizes = [len(lists.get(name, [])) for name in group]
            if len(set(sizes)) > 1:
                raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                              f"$pre.mgid: {', '.join(group)} have {sizes} elements; one "
                              f"per member expected (fake)")
        mgid, nodes = _exact(te), lists.get("$MULTICAST_NODE_ID", [])
        existing = {_exact(e) for e in self.entries.values() if e.table_id == NODE_ID}
        for node in nodes:
            if node not in existing:
                raise Refused(grpc.StatusCode.NOT_FOUND,
                              f"$pre.mgid {mgid}: no $pre.node {node} (fake)")
            if node in self.groups:
                raise Refused(grpc.StatusCode.ALREADY_EXISTS,
                              f"$pre.mgid {mgid}: $pre.node {node} is in group "
                              f"{self.groups[node]} already (fake)")
        self.groups.update((node, mgid) for node in nodes)

    def _write(self, req, ctx):
        with self.lock:
            self.requests.append(req)
            self._program_of(req, ctx)
            errors = {}
            for index, up in enumerate(req.updates):
                try:
                    self._update(up)
                except Refused as exc:
                    errors[index] = exc
        if errors:
            ctx.set_trailing_metadata(
                (("grpc-status-details-bin", error_status("Write Error Status", errors)),))
            ctx.abort(grpc.StatusCode.UNKNOWN, "Write Error Status")
        return PB2.WriteResponse()

    def _read_one(self, te) -> list:
        if te.table_id == PORT_STR_INFO_ID:
            name = te.key.fields[0].exact.value.decode()
            if name not in self.fronts:
                raise Refused(grpc.StatusCode.NOT_FOUND, f"no port {name} (fake)")
            out = PB2.TableEntry(table_id=te.table_id)
            out.key.CopyFrom(te.key)
            dev_port = FIXED["$PORT_STR_INFO"]["data"][0]["singleton"]["id"]
            out.data.fields.add(field_id=dev_port, stream=self.fronts[name].to_bytes(4, "big"))
            return [out]
        table = self.schema.get(te.table_id)
        if table is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"no table id {te.table_id} (fake)")
        if table.get("table_type") == "Counter":
            return self._read_counter(table, te)
        with self.lock:
            return [e for e in self.entries.values() if e.table_id == te.table_id
                    and (not te.key.fields or self._key(e) == self._key(te))]

    def _read_counter(self, table: dict, te) -> list:
        if te.table_flags.from_hw or te.table_read_flag.from_hw:
            self.synced.update(self.counters)
        index_id = table["key"][0]["id"]
        data = {d["singleton"]["name"]: d["singleton"]["id"] for d in table["data"]}
        out = []
        for index in range(table["size"]):
            pkts, octets = self.synced.get((table["id"], index), (0, 0))
            cell = PB2.TableEntry(table_id=table["id"])
            cell.key.fields.add(field_id=index_id).exact.value = index.to_bytes(4, "big")
            cell.data.fields.add(field_id=data["$COUNTER_SPEC_PKTS"],
                                 stream=pkts.to_bytes(8, "big"))
            cell.data.fields.add(field_id=data["$COUNTER_SPEC_BYTES"],
                                 stream=octets.to_bytes(8, "big"))
            out.append(cell)
        return out

    def _read(self, req, ctx):
        self.requests.append(req)
        self._program_of(req, ctx)
        found, errors = [], {}
        for index, ent in enumerate(req.entities):
            try:
                found += self._read_one(ent.table_entry)
            except Refused as exc:
                errors[index] = exc
        if errors:
            ctx.set_trailing_metadata(
                (("grpc-status-details-bin", error_status("Read Error Status", errors)),))
            ctx.abort(grpc.StatusCode.UNKNOWN, "Read Error Status")
        yield PB2.ReadResponse(entities=[PB2.Entity(table_entry=e) for e in found])

    def _set(self, req, ctx):
        self.requests.append(req)
        if req.action != req.VERIFY_AND_WARM_INIT_BEGIN_AND_END:
            ctx.abort(grpc.StatusCode.UNIMPLEMENTED, "only pushes are faked")
        with self.lock:  # a fast-reconfig push keeps the ports (bf_switchd replays them)
            self.entries = {k: te for k, te in self.entries.items() if k[0] == PORT_ID}
            self.groups.clear()
            self.counters.clear()
            self.synced.clear()
            self.program = req.config[0].p4_name
            self.schema = {t["id"]: t for t in NON_P4["tables"]}
            self.schema.update((t["id"], t) for t in
                               json.loads(req.config[0].bfruntime_info)["tables"])
        return PB2.SetForwardingPipelineConfigResponse()

    def _get(self, req, ctx):
        self.requests.append(req)
        resp = PB2.GetForwardingPipelineConfigResponse(
            non_p4_config=PB2.NonP4Config(bfruntime_info=FIXED_JSON.read_bytes()))
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
