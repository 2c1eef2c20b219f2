"""Hash and checksum algorithms of bmv2 and the input-buffer builder for named calculations.

bmv2 concatenates the input fields bit by bit (skipping fields of invalid headers), pads the
last byte with zero bits and runs the algorithm over those bytes; we reproduce that exactly so
hashes and checksums match simple_switch bit for bit.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable
from typing import Any

from emulation.targets.embedded.expressions import Namespace, parse_hexstr
from emulation.targets.embedded.json_loader import Layout, PipelineError

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


def compile_calculation(layout: Layout, ns: Namespace, calc: dict[str, Any],
                        where: str) -> Callable[[list[Any]], int]:
    """Return ``fn(S) -> int`` computing a named calculation over the packet state."""
    algo = ALGORITHMS.get(calc.get("algo", ""))
    if algo is None:
        raise PipelineError(where, f"hash algorithm {calc.get('algo')!r} is not supported "
                                   f"(supported: {sorted(ALGORITHMS)})")
    lines = ["def calc(S):", "    acc = 0", "    nbits = 0"]
    for i, item in enumerate(calc.get("input", [])):
        iw = f"{where} input[{i}]"
        t = item.get("type")
        if t == "field":
            slot, width, _ = layout.field_slot(item["value"], iw)
            hdr = layout.header(item["value"][0], iw) if item["value"][0] in layout.headers \
                else None
            cond = f"if S[{hdr.valid_slot}]: " if hdr is not None and not hdr.metadata else ""
            lines.append(f"    {cond}acc = (acc << {width}) | (S[{slot}] & {(1 << width) - 1});"
                         f" nbits += {width}")
        elif t == "hexstr":
            width = int(item.get("bitwidth", 0))
            if width <= 0:
                raise PipelineError(iw, "hexstr input needs a positive 'bitwidth'")
            value = parse_hexstr(item["value"], iw) & ((1 << width) - 1)
            lines.append(f"    acc = (acc << {width}) | {value}; nbits += {width}")
        elif t == "header":
            hdr = layout.header(item["value"], iw)
            for fname, width in zip(hdr.field_names, hdr.widths, strict=True):
                slot = hdr.slots[fname]
                lines.append(f"    if S[{hdr.valid_slot}]: acc = (acc << {width}) | "
                             f"(S[{slot}] & {(1 << width) - 1}); nbits += {width}")
        else:
            raise PipelineError(iw, f"calculation input type {t!r} is not supported")
    lines += ["    pad = -nbits % 8",
              "    return ALGO((acc << pad).to_bytes((nbits + pad) // 8, 'big'))"]
    env = {"ALGO": algo}
    exec("\n".join(lines), env)  # noqa: S102 - source generated from validated JSON
    return env["calc"]
