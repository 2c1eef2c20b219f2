"""Source lines for whole-header operations, with simple_switch's semantics.

- setValid (add_header) zeroes the fields of an invalid header; add_header_fast does not.
- A header that becomes valid invalidates the other members of its union (bmv2's
  UnionMembership), whether by setValid, extract or assignment.
- assign_header copies validity and fields when the source is valid and only invalidates the
  destination otherwise.
- push_front/pop_front (P4_16 stacks, bmv2's default build): elements shift by ``count``, the
  ones shifted in are invalid, and the next index moves by ``count`` within the stack.
"""

from __future__ import annotations

from emulation.targets.embedded.expressions import HRef, slot_add
from emulation.targets.embedded.json_loader import PipelineError, StackInfo


def mark_valid(h: HRef, ind: str) -> list[str]:
    """Make ``h`` valid, invalidating its union's other members."""
    return [ind + f"S[{h.base}] = True"] + [ind + f"S[{p}] = False" for p in h.peers]


def set_valid(h: HRef, ind: str, reset: bool) -> list[str]:
    """add_header (``reset``: zero the fields of an invalid header) or add_header_fast."""
    if not reset:
        return mark_valid(h, ind)
    n = h.htype.nfields
    zero = [f"S[{h.first}:{slot_add(h.first, n)}] = {[0] * n!r}"] if n else []
    return ([ind + f"if not S[{h.base}]:"] + [ind + "    " + ln for ln in zero]
            + mark_valid(h, ind + "    "))


def assign_header(dst: HRef, src: HRef, ind: str) -> list[str]:
    """bmv2's assign_header: an invalid source only invalidates the destination."""
    n = dst.htype.span - 1
    return ([ind + f"if S[{src.base}]:"] + mark_valid(dst, ind + "    ")
            + [ind + f"    S[{dst.first}:{slot_add(dst.first, n)}] = "
                     f"S[{src.first}:{slot_add(src.first, n)}]",
               ind + "else:", ind + f"    S[{dst.base}] = False"])


def assign_stack(dst: StackInfo, src: StackInfo, ind: str, where: str) -> list[str]:
    """Stack assignment: the next index, then each element as assign_header."""
    if dst.size != src.size or dst.stride != src.stride:
        raise PipelineError(where, f"stacks {dst.name!r} and {src.name!r} differ in shape")
    lines = [ind + f"S[{dst.next_slot}] = S[{src.next_slot}]"]
    if dst.is_union_stack:
        for du, su in zip(dst.unions, src.unions, strict=True):
            for dm, sm in zip(du.members, su.members, strict=True):
                lines += assign_header(HRef.of(dm), HRef.of(sm), ind)
    else:
        for dh, sh in zip(dst.headers, src.headers, strict=True):
            lines += assign_header(HRef.of(dh), HRef.of(sh), ind)
    return lines


def shift_stack(st: StackInfo, count: str, push: bool, ind: str) -> list[str]:
    """push_front / pop_front by ``count`` (source of a non-negative int) elements, swapping
    elements exactly as bmv2 does (an invalid element keeps the values swapped into it).
    Elements of a union stack are not invalidated: bmv2's HeaderUnion::mark_invalid is a
    no-op."""
    size, stride, base, nxt = st.size, st.stride, st.base, st.next_slot
    a, b = f"{base} + i * {stride}", f"{base} + (i {'-' if push else '+'} k) * {stride}"
    swap = [f"S[{a}:{a} + {stride}], S[{b}:{b} + {stride}] = "
            f"S[{b}:{b} + {stride}], S[{a}:{a} + {stride}]"]
    if push:
        lines = [f"S[{nxt}] = min({size}, S[{nxt}] + k)",
                 f"for i in range({size} - 1, k - 1, -1):"]
        gone = f"range(min(k, {size}))"
    else:
        lines = [f"S[{nxt}] -= min(S[{nxt}], k)", f"for i in range({size} - k):"]
        gone = f"range(max({size} - k, 0), {size})"
    lines += ["    " + ln for ln in swap]
    if not st.is_union_stack:
        lines += [f"for i in {gone}:", f"    S[{a}] = False"]
    return [ind + f"k = {count}", ind + "if k:"] + [ind + "    " + ln for ln in lines]
