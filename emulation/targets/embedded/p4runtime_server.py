"""P4Runtime service of the embedded target (p4runtime 1.4 protos, gRPC).

Covers what the testbed and p4runtime-shell use: arbitration (primary election per device),
Set/GetForwardingPipelineConfig, Write of table entries (incl. default action), multicast groups,
clone sessions, counters and registers, Read of all of those (registers too, which bmv2 lacks)
and Capabilities.  Errors follow the spec: a failed Write answers UNKNOWN with a
google.rpc.Status whose details hold one p4.v1.Error per update.  The work is done in
``emulation.targets.embedded.p4rt``; this module assembles the service and starts it, with the
target's statistics method (``emulation.targets.embedded.stats``) beside it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from emulation.targets.embedded.p4info_map import bind
from emulation.targets.embedded.p4rt import config, read, stream, write
from emulation.targets.embedded.p4rt.state import ServerState
from emulation.targets.embedded.pipeline import Switch, load_program
from emulation.targets.embedded.ports import PortLoop
from emulation.targets.embedded.stats import collector, stats_handler

API_VERSION = "1.4.1"


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """The gRPC service of one device; each RPC is handled by its module in ``p4rt``."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    def Capabilities(self, request: Any, context: grpc.ServicerContext) -> Any:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def SetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        return config.set_pipeline(self.state, request, context)

    def GetForwardingPipelineConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        return config.get_pipeline(self.state, request, context)

    def StreamChannel(self, request_iterator: Iterator[Any], context: grpc.ServicerContext
                      ) -> Iterator[Any]:
        return stream.stream_channel(self.state, request_iterator, context)

    def Write(self, request: Any, context: grpc.ServicerContext) -> Any:
        return write.write(self.state, request, context)

    def Read(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        return read.read(self.state, request, context)


def serve(switch: Switch, device_id: int, address: str, lock: threading.Lock,
          workers: int = 4, ports: PortLoop | None = None) -> tuple[grpc.Server, ServerState]:
    """Start the P4Runtime gRPC server on ``address`` (HOST:PORT) with the stats method
    (counting ``ports``' losses too); returns it running."""
    state = ServerState(switch, device_id, lock)
    # no SO_REUSEPORT: a second switch on the same address must fail, not share the port
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers + 8),
                         options=[("grpc.so_reuseport", 0)])
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(P4RuntimeServicer(state), server)
    server.add_generic_rpc_handlers((stats_handler(collector(switch, device_id, lock, ports)),))
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
    program = load_program(device_config)
    stored = p4runtime_pb2.ForwardingPipelineConfig(p4info=p4info,
                                                    p4_device_config=device_config)
    config.install(state, program, bind(p4info, program), stored)
    return switch, P4RuntimeServicer(state)


def apply_updates(servicer: P4RuntimeServicer, *updates: Any) -> None:
    """Apply Write updates in-process; the first failure raises its EntryError."""
    state = servicer.state
    assert state.map is not None
    with state.lock:
        for update in updates:
            write.apply_update(state, state.map, update)
