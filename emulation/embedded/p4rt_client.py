"""A minimal P4Runtime client (raw p4runtime stubs) for the target's benchmark and tests.

WHY not p4runtime-shell here: its API is a process-wide singleton, and the benchmark programs
two different switches (embedded and bmv2) one after the other; the testbed's controller uses
its own driver.  This client speaks only what those need: arbitration, pipeline push, table
entries by name, multicast groups, and reads.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc


def load_p4info(path: str) -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    with open(path) as f:
        text_format.Merge(f.read(), info)
    return info


def encode(value: int, bitwidth: int) -> bytes:
    return value.to_bytes((bitwidth + 7) // 8, "big")


def find(p4info: p4info_pb2.P4Info, kind: str, name: str) -> Any:
    """The P4Info object of ``kind`` ('tables', 'actions', ...) named ``name``."""
    for obj in getattr(p4info, kind):
        if obj.preamble.name == name or obj.preamble.alias == name:
            return obj
    raise KeyError(f"no {kind[:-1]} named {name!r} in the P4Info")


def table_entry(p4info: p4info_pb2.P4Info, table: str, match: dict[str, Any],
                action: str | None = None, params: dict[str, int] | None = None,
                priority: int = 0, default: bool = False) -> p4runtime_pb2.TableEntry:
    """Match values: exact int, lpm (value, plen), ternary (value, mask), range (lo, hi)."""
    t = find(p4info, "tables", table)
    te = p4runtime_pb2.TableEntry(table_id=t.preamble.id, priority=priority,
                                  is_default_action=default)
    fields = {f.name: f for f in t.match_fields}
    for name, value in match.items():
        f = fields[name]
        fm = te.match.add(field_id=f.id)
        mt = f.match_type
        if mt == p4info_pb2.MatchField.EXACT:
            fm.exact.value = encode(value, f.bitwidth)
        elif mt == p4info_pb2.MatchField.LPM:
            fm.lpm.value, fm.lpm.prefix_len = encode(value[0], f.bitwidth), value[1]
        elif mt == p4info_pb2.MatchField.TERNARY:
            fm.ternary.value = encode(value[0], f.bitwidth)
            fm.ternary.mask = encode(value[1], f.bitwidth)
        elif mt == p4info_pb2.MatchField.RANGE:
            fm.range.low, fm.range.high = (encode(value[0], f.bitwidth),
                                           encode(value[1], f.bitwidth))
        else:
            fm.optional.value = encode(value, f.bitwidth)
    if action is not None:
        a = find(p4info, "actions", action)
        te.action.action.action_id = a.preamble.id
        pinfo = {p.name: p for p in a.params}
        for pname, value in (params or {}).items():
            p = pinfo[pname]
            te.action.action.params.add(param_id=p.id, value=encode(value, p.bitwidth))
    return te


def table_update(te: p4runtime_pb2.TableEntry,
                 utype: int = p4runtime_pb2.Update.INSERT) -> p4runtime_pb2.Update:
    update = p4runtime_pb2.Update(type=utype)
    update.entity.table_entry.CopyFrom(te)
    return update


def multicast_update(group_id: int, replicas: list[tuple[int, int]],
                     utype: int = p4runtime_pb2.Update.INSERT) -> p4runtime_pb2.Update:
    update = p4runtime_pb2.Update(type=utype)
    g = update.entity.packet_replication_engine_entry.multicast_group_entry
    g.multicast_group_id = group_id
    for port, rid in replicas:
        g.replicas.add(egress_port=port, instance=rid)
    return update


class Client:
    """One primary P4Runtime session to one device."""

    def __init__(self, address: str, device_id: int = 0, election_id: int = 1,
                 timeout: float = 10.0) -> None:
        self.device_id = device_id
        self.election = election_id
        self.channel = grpc.insecure_channel(address)
        grpc.channel_ready_future(self.channel).result(timeout=timeout)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.requests: queue.Queue = queue.Queue()
        self.responses: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self.requests.get, None))
        threading.Thread(target=self._pump, daemon=True).start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = device_id
        req.arbitration.election_id.low = election_id
        self.requests.put(req)
        self.arbitration = self.responses.get(timeout=timeout)
        self.p4info: p4info_pb2.P4Info | None = None

    def _pump(self) -> None:
        try:
            for msg in self.stream:
                self.responses.put(msg)
        except grpc.RpcError as exc:
            self.responses.put(exc)

    def close(self) -> None:
        self.requests.put(None)
        self.channel.close()

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id)
        req.election_id.low = self.election
        req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        self.stub.SetForwardingPipelineConfig(req)
        self.p4info = p4info

    def write(self, *updates: p4runtime_pb2.Update) -> None:
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        req.election_id.low = self.election
        req.updates.extend(updates)
        self.stub.Write(req)

    def read(self, *entities: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        for resp in self.stub.Read(req):
            yield from resp.entities

    def insert(self, te: p4runtime_pb2.TableEntry,
               utype: int = p4runtime_pb2.Update.INSERT) -> None:
        self.write(table_update(te, utype))

    def table_entry(self, *args: Any, **kwargs: Any) -> p4runtime_pb2.TableEntry:
        assert self.p4info is not None, "set_pipeline first"
        return table_entry(self.p4info, *args, **kwargs)

    def object_id(self, kind: str, name: str) -> int:
        assert self.p4info is not None, "set_pipeline first"
        return find(self.p4info, kind, name).preamble.id
