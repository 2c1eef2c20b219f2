"""StreamChannel: master arbitration per stream; packet-out is refused (no CPU port)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from google.rpc import code_pb2

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from emulation.targets.embedded.p4rt.state import ServerState

log = logging.getLogger("inart.embedded.p4rt")
CLOSE_GRACE_S = 1.0  # how long a duplicate election id waits for its holder's stream to end


def stream_channel(state: ServerState, request_iterator: Iterator[Any],
                   context: grpc.ServicerContext) -> Iterator[Any]:
    """Answer one client's stream; a reader thread feeds the queue this generator drains, so
    arbitration updates caused by other streams reach this client too."""
    out: queue.Queue = queue.Queue()
    key = id(out)

    def reader() -> None:
        try:
            for msg in request_iterator:
                if msg.HasField("arbitration"):
                    arbitrate(state, msg.arbitration, key, out, context.is_active)
                elif msg.HasField("packet"):
                    out.put(stream_error(msg, code_pb2.UNIMPLEMENTED,
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


def stream_error(msg: Any, code: int, text: str) -> Any:
    resp = p4runtime_pb2.StreamMessageResponse()
    resp.error.canonical_code = code
    resp.error.message = text
    resp.error.packet_out.packet_out.CopyFrom(msg.packet)
    return resp


def arbitrate(state: ServerState, arb: Any, key: int, out: queue.Queue,
              active: Callable[[], bool]) -> None:
    """Record this stream's election id and tell every stream who is primary now."""
    if arb.device_id != state.device_id:
        out.put(grpc.StatusCode.NOT_FOUND)
        return
    if arb.role.name:
        out.put(grpc.StatusCode.UNIMPLEMENTED)
        return
    eid = (arb.election_id.high << 64) | arb.election_id.low
    deadline = time.monotonic() + CLOSE_GRACE_S
    while True:
        with state.arb_lock:
            state.forget_closed()
            others = [e for k, (e, _, _) in state.streams.items() if k != key]
            if eid not in others:
                state.streams[key] = (eid, out, active)
                state.notify_all()
                return
        if time.monotonic() >= deadline:
            out.put(grpc.StatusCode.INVALID_ARGUMENT)
            return
        time.sleep(0.02)  # the same id's previous stream may be closing: wait for it
