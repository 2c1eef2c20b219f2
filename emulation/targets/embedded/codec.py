"""Source snippets that move one header between wire bytes and its field slots.

WHY chunks: a header is read and written with ONE precompiled ``struct.Struct`` call (C speed)
whatever its field widths.  Fields are grouped into the shortest byte-aligned runs (e.g.
IPv4's version+ihl, flags+fragment offset); each run is read as 8/16/32/64-bit big-endian
words and split with shifts only where a field does not fill its words.  A header with a
varbit field goes through one big integer, since its field offsets depend on the length.

Slots are given as the slot of the header's first field: an int, or the source of an
expression (a stack element chosen at run time).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from emulation.targets.embedded.expressions import Namespace
from emulation.targets.embedded.json_loader import HeaderType

CHUNK_CODES = {64: "Q", 32: "I", 16: "H", 8: "B"}


def slot_at(first: int | str, j: int) -> str:
    """Source of the slot index of field ``j`` when field 0 is at ``first``."""
    if isinstance(first, int):
        return str(first + j)
    return f"{first} + {j}" if j else str(first)


@dataclass
class Group:
    """A byte-aligned run of fields read as consecutive chunks (widths in bits)."""

    fields: list[int]  # field indices
    chunks: list[int]  # chunk widths, most significant first

    def width(self, htype: HeaderType) -> int:
        return sum(htype.widths[f] or 0 for f in self.fields)


def split_chunks(width: int) -> list[int]:
    """A byte-aligned width as 64/32/16/8-bit words, widest first."""
    out = []
    while width:
        c = next(c for c in (64, 32, 16, 8) if c <= width)
        out.append(c)
        width -= c
    return out


def groups(htype: HeaderType) -> list[Group]:
    """The shortest byte-aligned runs of a fixed-width header's fields."""
    out: list[Group] = []
    run: list[int] = []
    bits = 0
    for j, w in enumerate(htype.widths):
        assert w is not None
        run.append(j)
        bits += w
        if bits % 8 == 0:
            out.append(Group(run, split_chunks(bits)))
            run, bits = [], 0
    assert not run, "header is not a whole number of bytes"
    return out


def header_struct(htype: HeaderType) -> tuple[struct.Struct, list[Group]]:
    """The Struct reading all chunks of a fixed-width header, and its field groups."""
    gs = groups(htype)
    codes = []
    for g in gs:
        if len(g.fields) == 1 and len(g.chunks) == 1 and htype.signed[g.fields[0]]:
            codes.append(CHUNK_CODES[g.chunks[0]].lower())
        else:
            codes.extend(CHUNK_CODES[c] for c in g.chunks)
    return struct.Struct(">" + "".join(codes)), gs


def signed_fix(src: str, width: int) -> str:
    half = 1 << (width - 1)
    return f"((({src}) + {half}) & {(1 << width) - 1}) - {half}"


def extract_lines(htype: HeaderType, first: int | str, ns: Namespace, ind: str,
                  buf: str = "buf", off: str = "off") -> list[str]:
    """Lines that read a fixed-width header at ``buf[off:]`` into its slots (bounds already
    checked)."""
    st, gs = header_struct(htype)
    unpack = ns.bind("unpack", st.unpack_from)
    n = htype.nfields
    target = f"S[{slot_at(first, 0)}:{slot_at(first, n)}]"
    if all(len(g.fields) == 1 and len(g.chunks) == 1 for g in gs):
        return [f"{ind}{target} = {unpack}({buf}, {off})"]
    names: list[str] = []
    values: list[str] = []
    k = 0
    for g in gs:
        direct = len(g.fields) == 1 and len(g.chunks) == 1
        parts = []
        for c in g.chunks:
            names.append(f"_c{k}")
            parts.append((f"_c{k}", c))
            k += 1
        if direct:
            values.append(parts[0][0])
            continue
        total = sum(c for _, c in parts)
        combined, shift = [], total
        for name, c in parts:
            shift -= c
            combined.append(f"({name} << {shift})" if shift else name)
        whole = combined[0] if len(combined) == 1 else "(" + " | ".join(combined) + ")"
        shift = total
        for f in g.fields:
            w = htype.widths[f]
            assert w is not None
            shift -= w
            v = f"({whole} >> {shift})" if shift else whole
            if len(g.fields) > 1:
                v = f"({v} & {(1 << w) - 1})" if shift else f"({whole} & {(1 << w) - 1})"
            values.append(signed_fix(v, w) if htype.signed[f] else v)
    lines = [f"{ind}{', '.join(names)}{',' if len(names) == 1 else ''} = {unpack}({buf}, {off})"]
    lines.append(f"{ind}{target} = ({', '.join(values)}{',' if len(values) == 1 else ''})")
    return lines


def field_src(htype: HeaderType, first: int | str, f: int) -> str:
    """The field's value as an unsigned integer."""
    src = f"S[{slot_at(first, f)}]"
    w = htype.widths[f]
    if htype.signed[f] and w is not None:
        return f"({src} & {(1 << w) - 1})"
    return src


def emit_expr(htype: HeaderType, first: int | str, ns: Namespace) -> str:
    """An expression producing a fixed-width header's wire bytes from its slots."""
    st, gs = header_struct(htype)
    pack = ns.bind("pack", st.pack)
    args: list[str] = []
    for g in gs:
        if len(g.fields) == 1 and len(g.chunks) == 1:
            f = g.fields[0]
            args.append(f"S[{slot_at(first, f)}]" if htype.signed[f]
                        else field_src(htype, first, f))
            continue
        total = g.width(htype)
        shift = total
        terms = []
        for f in g.fields:
            w = htype.widths[f]
            assert w is not None
            shift -= w
            v = field_src(htype, first, f)
            terms.append(f"({v} << {shift})" if shift else v)
        whole = terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"
        shift = total
        for i, c in enumerate(g.chunks):  # the first chunk needs no mask: whole < 2**total
            shift -= c
            v = f"({whole} >> {shift})" if shift else whole
            args.append(f"({v} & {(1 << c) - 1})" if i else v)
    return f"{pack}({', '.join(args)})"


def vl_extract_lines(htype: HeaderType, first: int | str, length: str, ind: str,
                     buf: str = "buf", off: str = "off") -> list[str]:
    """Lines reading a header with a varbit field of ``length`` bits (a local holding a
    multiple of 8) at ``buf[off:]``; bounds already checked."""
    fixed = htype.fixed_bits
    lines = [f"{ind}v = int.from_bytes({buf}[{off}:{off} + ({fixed} + {length}) // 8], 'big')"]
    after = fixed  # bits of the fields after the current one, the varbit one counted apart
    vl_seen = False
    for f, w in enumerate(htype.widths):
        if w is None:
            vl_seen = True
            shift = str(after)
            mask = f"((1 << {length}) - 1)"
        else:
            after -= w
            shift = str(after) if vl_seen else f"({length} + {after})"
            mask = str((1 << w) - 1)
        v = f"((v >> {shift}) & {mask})"
        if w is not None and htype.signed[f]:
            v = signed_fix(v, w)
        lines.append(f"{ind}S[{slot_at(first, f)}] = {v}")
    lines.append(f"{ind}S[{slot_at(first, htype.nfields)}] = {length}")
    return lines


def vl_emit_expr(htype: HeaderType, first: int | str) -> str:
    """An expression producing the wire bytes of a header with a varbit field."""
    length = f"S[{slot_at(first, htype.nfields)}]"
    after = htype.fixed_bits
    vl_seen = False
    terms = []
    for f, w in enumerate(htype.widths):
        if w is None:
            vl_seen = True
            terms.append(f"(S[{slot_at(first, f)}] << {after})")
            continue
        after -= w
        shift = str(after) if vl_seen else f"({length} + {after})"
        terms.append(f"({field_src(htype, first, f)} << {shift})")
    return (f"({' | '.join(terms)}).to_bytes(({htype.fixed_bits} + {length}) // 8, 'big')")
