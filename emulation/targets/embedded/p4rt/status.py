"""Errors as the P4Runtime spec wants them: a failed Write answers UNKNOWN with a
google.rpc.Status whose details hold one p4.v1.Error per update (spec section 12)."""

from __future__ import annotations

import grpc
from google.rpc import code_pb2, status_pb2

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from emulation.targets.embedded.tables import EntryError

ERROR_SPACE = "inart-embedded"


def update_error(exc: EntryError | None) -> p4runtime_pb2.Error:
    """The p4.v1.Error of one update: OK, or the refusal's code and message."""
    if exc is None:
        return p4runtime_pb2.Error(canonical_code=code_pb2.OK)
    return p4runtime_pb2.Error(canonical_code=code_pb2.Code.Value(exc.code), message=str(exc),
                               space=ERROR_SPACE)


def abort_write(context: grpc.ServicerContext, errors: list[p4runtime_pb2.Error]) -> None:
    """End a Write that refused some update (raises): every update's Error in the trailing
    status."""
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failed")
    for err in errors:
        status.details.add().Pack(err)
    context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    first = next(e for e in errors if e.canonical_code != code_pb2.OK)
    context.abort(grpc.StatusCode.UNKNOWN, f"Write failed: {first.message}")


def abort_entry(context: grpc.ServicerContext, exc: EntryError) -> None:
    """End a Read with the refusal's own status code (raises)."""
    context.abort(getattr(grpc.StatusCode, exc.code), str(exc))
