"""What the service knows about its one device: pipeline, P4Info binding, arbitration."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import grpc
from google.rpc import code_pb2

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from emulation.targets.embedded.p4info_map import P4InfoMap
from emulation.targets.embedded.pipeline import Program, Switch


class ServerState:
    """Pipeline, P4Info binding and arbitration of one device.

    ``lock`` is the switch lock the data path also holds: every state change takes it.
    """

    def __init__(self, switch: Switch, device_id: int, lock: threading.Lock) -> None:
        self.switch = switch
        self.device_id = device_id
        self.lock = lock
        self.map: P4InfoMap | None = None
        self.config: p4runtime_pb2.ForwardingPipelineConfig | None = None
        self.saved: tuple[Program, P4InfoMap, Any] | None = None
        # stream key -> (election id, its message queue, whether its RPC is still active)
        self.streams: dict[int, tuple[int, queue.Queue, Callable[[], bool]]] = {}
        self.arb_lock = threading.Lock()

    # ---- request guards ---------------------------------------------------------------------
    def check_device(self, device_id: int, context: grpc.ServicerContext) -> None:
        if device_id != self.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"device_id {device_id}: this switch is device {self.device_id}")

    def need_pipeline(self, context: grpc.ServicerContext) -> P4InfoMap:
        if self.map is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                          "no forwarding pipeline config has been set")
        assert self.map is not None
        return self.map

    def check_writer(self, request: Any, context: grpc.ServicerContext) -> None:
        """A request that changes the device: this device, the default role, the primary."""
        self.check_device(request.device_id, context)
        if request.role:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "only the default role is supported")
        eid = (request.election_id.high << 64) | request.election_id.low
        with self.arb_lock:
            primary = self.primary_election()
        if primary is None or eid != primary:
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"election id {eid} is not the primary's ({primary})")

    # ---- arbitration ------------------------------------------------------------------------
    def primary_election(self) -> int | None:
        return max((e for e, _, _ in self.streams.values()), default=None)

    def forget_closed(self) -> bool:
        """Drop streams whose RPC has ended but whose handler has not cleaned up yet (a
        client that reconnects at once races that cleanup); whether any was dropped."""
        closed = [k for k, (_, _, active) in self.streams.items() if not active()]
        for k in closed:
            del self.streams[k]
        return bool(closed)

    def notify_all(self) -> None:
        primary = self.primary_election()
        for election, q, _ in self.streams.values():
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
