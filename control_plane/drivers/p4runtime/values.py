"""P4Runtime values and errors: canonical bytestrings, and the one exception every
P4Runtime failure of the project raises (it names the entity and the reason)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import grpc

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2

Value = int | str | bytes
DEFAULT_TIMEOUT_S = 10.0

__all__ = ["DEFAULT_TIMEOUT_S", "P4RuntimeError", "Value", "decode_value", "encode_value",
           "format_value", "parse_text_value"]


class P4RuntimeError(RuntimeError):
    """A P4Runtime request failed or could not be built; the message says where and why.

    ``code`` is the gRPC status of a failed RPC (None when no RPC failed) and ``errors`` the
    server's per-update p4.v1.Error list of a failed Write (P4Runtime spec section 12; empty if
    it sent none), so a caller can tell e.g. an existing entry from a malformed one.
    """

    def __init__(self, message: str, code: grpc.StatusCode | None = None,
                 errors: Sequence[p4runtime_pb2.Error] = ()):
        super().__init__(message)
        self.code = code
        self.errors = list(errors)


# ---------------------------------------------------------------------------------------------
# values


def encode_value(value: Value, bitwidth: int, what: str) -> bytes:
    """Encode an int, IPv4 string, MAC string or bytes as P4Runtime's canonical bytestring.

    Canonical = big-endian without leading zero bytes (at least one byte), which P4Runtime
    servers must accept.  ``what`` names the field in error messages.
    """
    if isinstance(value, bytes):
        number = int.from_bytes(value, "big")
    elif isinstance(value, bool):
        raise P4RuntimeError(f"{what}: expected an integer, address or bytes, got a bool")
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str):
        number = parse_text_value(value, what)
    else:
        raise P4RuntimeError(f"{what}: expected int, str or bytes, got {type(value).__name__}")
    if number < 0 or number >= 1 << bitwidth:
        raise P4RuntimeError(f"{what}: value {value!r} does not fit in {bitwidth} bits")
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def parse_text_value(text: str, what: str) -> int:
    try:
        if text.count(":") == 5:
            parts = text.split(":")
            if all(len(p) in (1, 2) for p in parts):
                return int("".join(p.zfill(2) for p in parts), 16)
        if text.count(".") == 3:
            return int(ipaddress.IPv4Address(text))
        return int(text, 0)
    except ValueError as exc:
        raise P4RuntimeError(
            f"{what}: cannot parse {text!r} (expected an integer, IPv4 a.b.c.d or MAC "
            f"aa:bb:cc:dd:ee:ff)"
        ) from exc


def decode_value(data: bytes) -> int:
    return int.from_bytes(data, "big")


def format_value(data: bytes, name: str, bitwidth: int, type_name: str = "") -> str:
    """A value read from a switch written as a plan writes it: by its P4Info type (a
    ``type_name`` such as ``ipv4_addr_t`` or ``mac_addr_t``) or, where P4Info has none (p4c
    names no typedef of a bit<N>), by the field's name and width (``*addr`` of 32 bits is an
    IPv4 address, ``*mac`` of 48 bits a MAC); everything else is a number, so a 32-bit
    ``pool_base`` of 0 reads 0, not 0.0.0.0."""
    number = decode_value(data)
    kind = (type_name or name).lower()
    if bitwidth == 32 and ("ipv4" in kind or kind.endswith("addr")):
        return str(ipaddress.IPv4Address(number & 0xFFFFFFFF))
    if bitwidth == 48 and "mac" in kind:
        return ":".join(f"{b:02x}" for b in (number & (1 << 48) - 1).to_bytes(6, "big"))
    return str(number)
