"""The P4Runtime driver: how the controller talks to bmv2, the embedded target and (through
Stratum) Tofino.  ``values`` (canonical bytestrings, the error type), ``p4info`` (name lookups),
``entities`` (update builders) and ``client`` (one primary session with one device)."""

from control_plane.drivers.p4runtime.client import P4RuntimeClient
from control_plane.drivers.p4runtime.entities import (
    CounterValue,
    build_default_entry,
    build_table_entry,
    clone_session_update,
    encode_update,
    encode_write_request,
    multicast_group_update,
    table_update,
)
from control_plane.drivers.p4runtime.p4info import P4Info
from control_plane.drivers.p4runtime.values import (
    DEFAULT_TIMEOUT_S,
    P4RuntimeError,
    decode_value,
    encode_value,
)

__all__ = [
    "DEFAULT_TIMEOUT_S", "CounterValue", "P4Info", "P4RuntimeClient", "P4RuntimeError",
    "build_default_entry", "build_table_entry", "clone_session_update", "decode_value",
    "encode_update", "encode_value", "encode_write_request", "multicast_group_update",
    "table_update",
]
