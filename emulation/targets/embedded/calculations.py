"""Hash and checksum algorithms of bmv2 and the input-buffer builder for named calculations.

bmv2 concatenates the input fields bit by bit (skipping fields of invalid headers), pads the
last byte with zero bits and runs the algorithm over those bytes; we reproduce that exactly so
hashes and checksums match simple_switch bit for bit.  A ``payload`` input (p4c's
``verify/update_checksum_with_payload``, e.g. TCP and UDP checksums) appends, as bmv2's
``BufBuilder`` does, the bytes the parser left unparsed after the padded fields, wherever the
input lists it.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emulation.targets.embedded.expressions import Namespace, parse_hexstr
from emulation.targets.embedded.json_loader import PAYLOAD, Layout, PipelineError

LITTLE = sys.byteorder == "little"


def _crc16_table() -> list[int]:
    """Table of the reflected CRC-16 (poly 0x8005, bmv2 'crc16' = CRC-16/ARC)."""
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC16 = _crc16_table()


def crc16(data: bytes) -> int:
    crc = 0
    for b in data:
        crc = (crc >> 8) ^ _CRC16[(crc ^ b) & 0xFF]
    return crc


def crc32(data: bytes) -> int:
    return zlib.crc32(data)


def csum16(data: bytes) -> int:
    """Internet checksum (ones' complement of the ones' complement sum of 16-bit words).

    The sum runs over native-order words in C (memoryview cast); the ones' complement sum is
    byte-order independent up to a final byte swap, which we apply on little-endian hosts.
    """
    if len(data) % 2:
        data = bytes(data) + b"\x00"
    total = sum(memoryview(data).cast("H"))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    total = ~total & 0xFFFF
    return ((total & 0xFF) << 8) | (total >> 8) if LITTLE else total


def xor16(data: bytes) -> int:
    out = 0
    for i in range(0, len(data), 2):
        chunk = data[i:i + 2]
        out ^= int.from_bytes(chunk.ljust(2, b"\x00"), "big")
    return out


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big")


def crccitt(data: bytes) -> int:
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


ALGORITHMS: dict[str, Callable[[bytes], int]] = {
    "crc16": crc16, "crc32": crc32, "csum16": csum16, "xor16": xor16, "identity": identity,
    "crcCCITT": crccitt, "crc16_custom": crc16, "crc32_custom": crc32,
}


@dataclass
class Calculation:
    """A named calculation: ``fn(S) -> int``, and for the Internet checksum over fixed-width
    inputs an expression generated code can inline instead of calling ``fn``."""

    fn: Callable[[list[Any]], int]
    inline: str | None = None
    payload: bool = False  # reads the unparsed bytes (slot PAYLOAD) after the fields


def input_items(layout: Layout, calc: dict[str, Any], where: str
                ) -> list[tuple[int | None, str, int | None, str | None]]:
    """(validity slot or None, value source, width or None, varbit length source) per input
    field, in order; a header input contributes each of its fields."""
    items: list[tuple[int | None, str, int | None, str | None]] = []
    for i, item in enumerate(calc.get("input", [])):
        iw = f"{where} input[{i}]"
        t = item.get("type")
        if t == "field":
            hdr, fname = layout.resolve(item["value"], iw)
            valid = None if hdr.metadata else hdr.valid_slot
            if fname == "$valid$":
                items.append((valid, f"(1 if S[{hdr.valid_slot}] else 0)", 1, None))
                continue
            hdrs = [(hdr, hdr.htype.offset(fname))]
            if hdrs[0][1] is None:
                raise PipelineError(iw, f"header {hdr.name!r} has no field {fname!r}")
        elif t == "header":
            hdr = layout.header(item["value"], iw)
            valid = None if hdr.metadata else hdr.valid_slot
            hdrs = [(hdr, j) for j in range(hdr.htype.nfields)]
        elif t == "hexstr":
            width = int(item.get("bitwidth", 0))
            if width <= 0:
                raise PipelineError(iw, "hexstr input needs a positive 'bitwidth'")
            value = parse_hexstr(item["value"], iw) & ((1 << width) - 1)
            items.append((None, str(value), width, None))
            continue
        elif t == "payload":
            continue  # appended after every field (with_payload), see compile_calculation
        else:
            raise PipelineError(iw, f"calculation input type {t!r} is not supported")
        for h, j in hdrs:
            assert j is not None
            width = h.widths[j]
            slot = h.valid_slot + 1 + j
            if width is None:
                items.append((valid, f"S[{slot}]", None, f"S[{h.vl_slot}]"))
            else:
                src = f"S[{slot}]"
                items.append((valid, f"({src} & {(1 << width) - 1})" if h.signed[j] else src,
                              width, None))
    return items


def csum16_inline(items: list[tuple[int | None, str, int | None, str | None]]) -> str | None:
    """The Internet checksum as one arithmetic expression, when every input has a fixed width
    and at most one header's validity decides which inputs count.

    WHY it is exact: 2**16 = 1 (mod 0xFFFF), so the ones' complement sum of the 16-bit words of
    the (zero-padded) input is its value modulo 0xFFFF, with 0xFFFF standing for a non-zero
    multiple; shifting each input by its bit position modulo 16 gives that value without
    building the bytes.
    """
    if any(width is None for _, _, width, _ in items):
        return None
    valids = {v for v, _, _, _ in items if v is not None}
    if len(valids) > 1:
        return None

    def formula(present: list[tuple[str, int]]) -> str:
        total = sum(w for _, w in present)
        padded = -(-total // 16) * 16
        end, terms = 0, []
        for src, w in present:
            end += w
            shift = (padded - end) % 16
            terms.append(f"({src} << {shift})" if shift else src)
        if not terms:
            return "65535"
        return f"(65535 - ((_s % 65535) or 65535) if (_s := {' + '.join(terms)}) else 65535)"

    with_all = formula([(src, w) for _, src, w, _ in items if w is not None])
    if not valids:
        return with_all
    (valid,) = valids
    without = formula([(src, w) for v, src, w, _ in items if v is None and w is not None])
    return f"({with_all} if S[{valid}] else {without})"


def compile_calculation(layout: Layout, ns: Namespace, calc: dict[str, Any],
                        where: str) -> Calculation:
    """Compile a named calculation over the packet state."""
    algo = ALGORITHMS.get(calc.get("algo", ""))
    if algo is None:
        raise PipelineError(where, f"hash algorithm {calc.get('algo')!r} is not supported "
                                   f"(supported: {sorted(ALGORITHMS)})")
    items = input_items(layout, calc, where)
    payload = any(item.get("type") == "payload" for item in calc.get("input", []))
    lines = ["def calc(S):", "    acc = 0", "    nbits = 0"]
    for valid, src, width, length in items:
        cond = f"if S[{valid}]: " if valid is not None else ""
        if width is None:
            lines.append(f"    {cond}L = {length}; acc = (acc << L) | {src}; nbits += L")
        else:
            lines.append(f"    {cond}acc = (acc << {width}) | {src}; nbits += {width}")
    tail = f" + S[{PAYLOAD}]" if payload else ""
    lines += ["    pad = -nbits % 8",
              f"    return ALGO((acc << pad).to_bytes((nbits + pad) // 8, 'big'){tail})"]
    env = {"ALGO": algo}
    exec("\n".join(lines), env)  # noqa: S102 - source generated from validated JSON
    inline = csum16_inline(items) if calc.get("algo") == "csum16" and not payload else None
    return Calculation(env["calc"], inline, payload)
