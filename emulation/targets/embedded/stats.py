"""Why frames vanish inside an embedded switch: its statistics, served beside P4Runtime.

One extra gRPC method on the P4Runtime server's address, ``/inart.embedded.Stats/Get``.
Request and response are JSON documents as raw bytes (no .proto to compile, any gRPC client
can call it); the request is ``{}``.  The response (``inart.embedded.stats/1``)::

    {"schema": "inart.embedded.stats/1", "device_id": 1, "pipeline": true,
     "ports": {"1": "s1-eth1", "2": "s1-eth2"},
     "rx": 1200, "tx": 1100,
     "drops": {"no_pipeline": 0, "ingress_drop": 95, "egress_drop": 0, ...},
     "errors": {"parser_error.PacketTooShort": 3, "checksum_error": 2}}

Counters run from the switch's start (a new pipeline does not reset them); compare two reads
for an interval.  ``drops`` lists every reason of ``pipeline.DROP_REASONS``; ``errors`` counts
frames that entered ingress flagged (the program then forwarded or dropped them).
bmv2 has no such method: reading it there raises StatsError.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import grpc

from emulation.targets.embedded.pipeline import Switch
from emulation.targets.embedded.ports import PortLoop

SERVICE = "inart.embedded.Stats"
METHOD = f"/{SERVICE}/Get"
SCHEMA = "inart.embedded.stats/1"


class StatsError(RuntimeError):
    """The stats call failed: no server there, or a switch without the method (bmv2)."""


def collector(switch: Switch, device_id: int, lock: threading.Lock,
              ports: PortLoop | None = None) -> Callable[[], dict[str, Any]]:
    """A function that returns the switch's statistics document, read under the switch lock."""
    names = {str(n): iface for n, iface in sorted(ports.ports.items())} if ports else {}

    def collect() -> dict[str, Any]:
        with lock:
            if ports is not None:
                ports.poll_overflow()
            doc = switch.snapshot()
        return {"schema": SCHEMA, "device_id": device_id, "ports": names, **doc}

    return collect


def stats_handler(collect: Callable[[], dict[str, Any]]) -> grpc.GenericRpcHandler:
    """The gRPC handler of ``Get``; add it to the P4Runtime server."""

    def get(request: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            query = json.loads(request or b"{}")
        except ValueError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"request: not JSON ({exc}); "
                                                            "expected {}")
        if query != {}:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"request {query!r}: expected {{}} (Get takes no fields)")
        return json.dumps(collect()).encode()

    return grpc.method_handlers_generic_handler(
        SERVICE, {"Get": grpc.unary_unary_rpc_method_handler(get)})


def read_stats(address: str, timeout: float = 5.0) -> dict[str, Any]:
    """The statistics document of the embedded switch whose P4Runtime server is ``address``."""
    with grpc.insecure_channel(address) as channel:
        try:
            reply = channel.unary_unary(METHOD)(b"{}", timeout=timeout)
        except grpc.RpcError as exc:
            hint = " (not an embedded target?)" \
                if exc.code() == grpc.StatusCode.UNIMPLEMENTED else ""
            raise StatsError(f"{address}: {METHOD} failed: {exc.code().name} "
                             f"{exc.details()}{hint}") from None
    doc = json.loads(reply)
    if doc.get("schema") != SCHEMA:
        raise StatsError(f"{address}: schema {doc.get('schema')!r}, expected {SCHEMA!r}")
    return doc


# drops the P4 program decided (mark_to_drop): aggregation absorbing contributions, duplicates,
# no route ... -- the program's own counters say which; the other reasons are the target's
PROGRAM_DROPS = ("ingress_drop", "egress_drop")


def reasons(stats: dict[str, Any], since: dict[str, Any] | None = None) -> dict[str, int]:
    """The non-zero drop reasons, then error flags, of ``stats`` (minus those of ``since``) as
    one flat dict: what a user reads to see why frames went missing."""
    counts: dict[str, int] = {}
    for part in ("drops", "errors"):
        before = since[part] if since else {}
        for reason, n in stats[part].items():
            if n - before.get(reason, 0):
                counts[reason] = n - before.get(reason, 0)
    return counts


def describe(counts: dict[str, int]) -> str:
    """``reason=count ...``, or ``none``."""
    return " ".join(f"{reason}={n}" for reason, n in counts.items()) or "none"
