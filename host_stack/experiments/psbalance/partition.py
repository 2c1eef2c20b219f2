"""The host stack's multi-PS seam: a partition x_s (PS id -> share, summing to 1).

Next to InArt's L-InArt, this derives x_s from measured per-node throughputs with Cai et al.'s
min-max load distribution (or its baselines).  Throughputs in any consistent unit.
"""

from __future__ import annotations

from collections.abc import Mapping

from host_stack.experiments.psbalance.loads import plan_shares


def partition_from_throughputs(throughputs: Mapping[str, float], scheme: str = "aware",
                               threshold: float = 1e-3) -> dict[str, float]:
    """x_s for every PS; `threshold` is Alg. 1's time tolerance for a unit-size model."""
    shares = plan_shares(scheme, throughputs, 1.0, threshold)
    total = sum(shares.values())
    return {ps: share / total for ps, share in shares.items()}
