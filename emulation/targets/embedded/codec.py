"""Source snippets that move one header between wire bytes and its field slots.

Headers whose fields are all 8/16/32/64 bits wide use one precompiled ``struct.Struct`` call
(C speed, one slice assignment); other headers go through one big integer and shifts.
"""

from __future__ import annotations

import struct

from emulation.targets.embedded.expressions import Namespace
from emulation.targets.embedded.json_loader import HeaderInfo

STRUCT_CODES = {8: "B", 16: "H", 32: "I", 64: "Q"}


def struct_for(hdr: HeaderInfo) -> struct.Struct | None:
    """A big-endian Struct for the header, or None when a field is not 8/16/32/64 bits."""
    codes = []
    for width, signed in zip(hdr.widths, hdr.signed, strict=True):
        code = STRUCT_CODES.get(width)
        if code is None:
            return None
        codes.append(code.lower() if signed else code)
    return struct.Struct(">" + "".join(codes))


def extract_lines(hdr: HeaderInfo, ns: Namespace, indent: str) -> list[str]:
    """Lines that read the header at ``buf[off:]`` into S (bounds already checked)."""
    nbytes = hdr.nbits // 8
    first, last = hdr.first_slot, hdr.first_slot + len(hdr.widths)
    st = struct_for(hdr)
    if st is not None:
        name = ns.bind("unpack", st.unpack_from)
        return [f"{indent}S[{first}:{last}] = {name}(buf, off)"]
    lines = [f"{indent}v = int.from_bytes(buf[off:off + {nbytes}], 'big')"]
    shift = hdr.nbits
    for slot_i, (width, signed) in enumerate(zip(hdr.widths, hdr.signed, strict=True)):
        shift -= width
        mask = (1 << width) - 1
        value = f"(v >> {shift}) & {mask}" if shift else f"v & {mask}"
        if signed:
            half = 1 << (width - 1)
            value = f"((({value}) + {half}) & {mask}) - {half}"
        lines.append(f"{indent}S[{first + slot_i}] = {value}")
    assert shift == 0
    return lines


def emit_expr(hdr: HeaderInfo, ns: Namespace) -> str:
    """An expression producing the header's wire bytes from S."""
    nbytes = hdr.nbits // 8
    first, last = hdr.first_slot, hdr.first_slot + len(hdr.widths)
    st = struct_for(hdr)
    if st is not None:
        name = ns.bind("pack", st.pack)
        return f"{name}(*S[{first}:{last}])"
    parts = []
    shift = hdr.nbits
    for slot_i, width in enumerate(hdr.widths):
        shift -= width
        part = f"(S[{first + slot_i}] & {(1 << width) - 1})"
        parts.append(f"({part} << {shift})" if shift else part)
    return f"({' | '.join(parts)}).to_bytes({nbytes}, 'big')"
