"""What the paper's cost model predicts, to set beside every measured speed-up.

Node i's link carries M + (N - 2) m_i bytes per direction at its rate S_i, so an iteration
lasts max_i t_i (loads.iteration_time).  The run records this for the bytes each PS
actually got and the rates tc actually set; ``predicted_speedups`` sweeps what a measurement
here cannot afford (many rate draws, skews, the baseline's definition) with a run's draws.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from host_stack.experiments.psbalance.cluster import RunConfig
from host_stack.experiments.psbalance.loads import iteration_time, plan_shares

SPEEDUP_SCHEMES = ("elastic", "aware")


def predicted_speedups(nodes: int, min_fraction: float, baseline: str,
                       models: Sequence[str], draws: int = 200,
                       seed: int = 0) -> dict[str, dict[str, float]]:
    """{model: {scheme: mean baseline time / mean scheme time}} over ``draws`` rate draws
    U[min_fraction, 1] per node (RunConfig.rate_draws), with exact (threshold 1e-9) shares."""
    if draws < 1:
        raise ValueError(f"draws: expected >= 1, got {draws}")
    rate_sets = RunConfig(nodes=nodes, max_mbit=1.0, min_fraction=min_fraction,
                          seed=seed).rate_draws(draws)
    out: dict[str, dict[str, float]] = {}
    for model in models:
        times: dict[str, list[float]] = {s: [] for s in (baseline, *SPEEDUP_SCHEMES)}
        for draw in rate_sets:
            rates = {str(i): r for i, r in enumerate(draw)}
            for scheme, acc in times.items():
                shares = plan_shares(scheme, rates, 1.0, 1e-9, model_name=model)
                acc.append(iteration_time(shares, rates, 1.0))
        base = statistics.mean(times[baseline])
        out[model] = {s: base / statistics.mean(times[s]) for s in SPEEDUP_SCHEMES}
    return out
