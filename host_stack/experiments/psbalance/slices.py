"""Alg. 2 (slice assignment): which PS aggregates which slice of the flat model.

Choices: the model is cut into probe slices of `probe_bytes` first (num_probe for every node,
shares or not, so idle nodes keep being measured), then regular slices of `slice_bytes`
(the paper derives the granularity from a lost Eq. 4; we take it as a parameter).  Each
regular slice goes to the node with the largest remaining load (share minus assigned).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Slice:
    """Bytes [offset, offset + length) of the flat model, aggregated by `ps`."""

    offset: int
    length: int
    ps: str
    probe: bool = False


def assign_slices(shares: Mapping[str, float], model_bytes: int, slice_bytes: int,
                  probe_bytes: int = 0, num_probe: int = 0) -> list[Slice]:
    """Cover the model with slices; each PS's total approximates its share (Alg. 2)."""
    if slice_bytes <= 0 or probe_bytes < 0 or num_probe < 0:
        raise ValueError("slice_bytes/probe_bytes/num_probe: expected > 0, >= 0, >= 0")
    if probe_bytes * num_probe * len(shares) > model_bytes:
        raise ValueError(f"num_probe x probe_bytes x nodes exceeds model_bytes={model_bytes}")
    remaining = dict(shares)
    out: list[Slice] = []
    offset = 0
    for _ in range(num_probe):
        for ps in shares:
            out.append(Slice(offset, probe_bytes, ps, probe=True))
            remaining[ps] -= probe_bytes
            offset += probe_bytes
    while offset < model_bytes:
        length = min(slice_bytes, model_bytes - offset)
        ps = max(remaining, key=remaining.__getitem__)
        out.append(Slice(offset, length, ps))
        remaining[ps] -= length
        offset += length
    return out


def bytes_per_ps(slices: list[Slice]) -> dict[str, int]:
    """Total bytes each PS aggregates under an assignment."""
    out: dict[str, int] = {}
    for s in slices:
        out[s.ps] = out.get(s.ps, 0) + s.length
    return out
