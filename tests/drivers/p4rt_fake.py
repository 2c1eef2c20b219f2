"""Test-only fake of a P4Runtime server standing in for Stratum on a Tofino: it arbitrates one
primary, keeps the pipeline it is given (without running it) and the entries written, and
records every request, so tests can check the bytes the P4Runtime driver sends."""

from __future__ import annotations

import grpc
from google.rpc import code_pb2

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from tests.drivers.fake_server import FakeServer


class FakeStratum(FakeServer, p4runtime_pb2_grpc.P4RuntimeServicer):
    """One device; ``requests`` holds every unary request in arrival order."""

    def __init__(self) -> None:
        super().__init__()
        self.config: p4runtime_pb2.ForwardingPipelineConfig | None = None
        self.entities: dict[bytes, p4runtime_pb2.Entity] = {}
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self, self.server)
        self.listen()

    # -- RPCs ---------------------------------------------------------------------------------
    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version="1.3.0")

    def StreamChannel(self, request_iterator, context):
        for req in request_iterator:
            if req.HasField("arbitration"):
                resp = p4runtime_pb2.StreamMessageResponse()
                resp.arbitration.device_id = req.arbitration.device_id
                resp.arbitration.election_id.CopyFrom(req.arbitration.election_id)
                resp.arbitration.status.code = code_pb2.OK
                yield resp

    def SetForwardingPipelineConfig(self, request, context):
        with self.lock:
            self.requests.append(request)
            self.config = request.config
            self.entities.clear()
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        self.requests.append(request)
        if self.config is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no pipeline (fake)")
        return p4runtime_pb2.GetForwardingPipelineConfigResponse(config=self.config)

    def Write(self, request, context):
        with self.lock:
            self.requests.append(request)
            for up in request.updates:
                key = up.entity.SerializeToString(deterministic=True)
                if up.type == p4runtime_pb2.Update.DELETE:
                    self.entities.pop(key, None)
                else:
                    self.entities[key] = up.entity
        return p4runtime_pb2.WriteResponse()

    def Read(self, request, context):
        self.requests.append(request)
        yield p4runtime_pb2.ReadResponse(entities=list(self.entities.values()))
