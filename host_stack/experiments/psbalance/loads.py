"""How much of the model each node's PS aggregates (Cai et al., Section 3.3).

Node i (worker + PS) holds the model of M bytes and aggregates a share m_i (sum m_i = M).  As a
worker it pushes and pulls M - m_i (its own share stays local); as a PS it receives m_i from
and returns m_i to each of the N - 1 other workers.  Per direction its load is
L_i = (M - m_i) + (N - 1) m_i = M + (N - 2) m_i and its time t_i = L_i / S_i (the lost
Eqs. 8-9, rebuilt from the prose).  Minimising max t_i with equal times gives the closed form
T* = 2 (N - 1) M / sum S_i and m_i = (T* S_i - M) / (N - 2); a node whose m_i would be
negative gets no share and T is recomputed over the rest.
"""

from __future__ import annotations

from collections.abc import Mapping

from host_stack.experiments.psbalance.mxnet_default import mxnet_shares

Shares = dict[str, float]


def _check(throughputs: Mapping[str, float], model: float) -> None:
    if len(throughputs) < 3:
        raise ValueError(f"throughputs: expected >= 3 nodes (N - 2 > 0), got {len(throughputs)}")
    bad = [k for k, s in throughputs.items() if not s > 0]
    if bad:
        raise ValueError(f"throughputs: expected positive rates, got {bad} <= 0")
    if not model > 0:
        raise ValueError(f"model: expected a positive size, got {model}")


def node_times(shares: Mapping[str, float], throughputs: Mapping[str, float],
               model: float) -> dict[str, float]:
    """t_i = (M + (N - 2) m_i) / S_i for every node."""
    n = len(throughputs)
    return {i: (model + (n - 2) * shares.get(i, 0.0)) / s for i, s in throughputs.items()}


def iteration_time(shares: Mapping[str, float], throughputs: Mapping[str, float],
                   model: float) -> float:
    """max_i t_i: every node transmits at once, so the slowest one ends the iteration."""
    return max(node_times(shares, throughputs, model).values())


def closed_form(throughputs: Mapping[str, float], model: float) -> tuple[Shares, float]:
    """Equal-time shares with negative shares removed; returns (m_i, T of the sharing nodes).

    Over the active set A: sum_A (T S_i - M)/(N - 2) = M gives T = (N - 2 + |A|) M / sum_A S_i
    (= 2 (N - 1) M / sum S_i when every node shares).  Drop nodes with T S_i < M and repeat.
    """
    _check(throughputs, model)
    n = len(throughputs)
    active = set(throughputs)
    while True:
        t = (n - 2 + len(active)) * model / sum(throughputs[i] for i in active)
        drop = {i for i in active if t * throughputs[i] < model}
        if not drop:
            break
        active -= drop
    shares = {i: ((t * throughputs[i] - model) / (n - 2) if i in active else 0.0)
              for i in throughputs}
    return shares, t


def load_distribution(throughputs: Mapping[str, float], model: float, threshold: float,
                      max_moves: int = 100_000) -> Shares:
    """Alg. 1: start equal, then repeatedly give the slowest and fastest node equal times.

    Moving d from the slowest node a (with a share to give) to the fastest b:
    (M + (N-2)(m_a - d)) / S_a = (M + (N-2)(m_b + d)) / S_b, so
    d = (S_b L_a - S_a L_b) / ((N - 2)(S_a + S_b)), clamped to m_a (a node then stops being an
    aggregation node).  Stops when the slowest sharing node and the fastest node differ by
    at most `threshold` (the paper: 1 s); `max_moves` bounds the loop.
    """
    _check(throughputs, model)
    if not threshold > 0:
        raise ValueError(f"threshold: expected > 0 seconds, got {threshold}")
    n = len(throughputs)
    shares = {i: model / n for i in throughputs}
    for _ in range(max_moves):
        times = node_times(shares, throughputs, model)
        a = max((i for i in shares if shares[i] > 0), key=times.__getitem__)
        b = min(times, key=times.__getitem__)
        if times[a] - times[b] <= threshold or a == b:
            return shares
        sa, sb = throughputs[a], throughputs[b]
        la, lb = times[a] * sa, times[b] * sb
        d = min(shares[a], (sb * la - sa * lb) / ((n - 2) * (sa + sb)))
        shares[a] -= d
        shares[b] += d
    raise RuntimeError(f"load_distribution: no convergence within {max_moves} moves")


def average(throughputs: Mapping[str, float], model: float) -> Shares:
    """Network-agnostic baseline: every PS gets M / N."""
    _check(throughputs, model)
    return {i: model / len(throughputs) for i in throughputs}


def elastic(throughputs: Mapping[str, float], model: float) -> Shares:
    """Elastic baseline [18], as we read it: shares proportional to each node's estimated
    transmission capability (its measured throughput).  Network-aware, but it ignores that a
    node also carries M - m_i as a worker, so it is not min-max optimal."""
    _check(throughputs, model)
    total = sum(throughputs.values())
    return {i: model * s / total for i, s in throughputs.items()}


SCHEMES = {"aware": "load_distribution", "average": "average", "elastic": "elastic",
           "average-mxnet": "mxnet_default.mxnet_shares"}


def plan_shares(scheme: str, throughputs: Mapping[str, float], model: float,
                threshold: float, model_name: str | None = None) -> Shares:
    """Shares in bytes for `scheme` in SCHEMES; "average-mxnet" (stock MXNet's key-to-server
    assignment) needs the architecture's ``model_name``."""
    if scheme == "aware":
        return load_distribution(throughputs, model, threshold)
    if scheme == "average":
        return average(throughputs, model)
    if scheme == "elastic":
        return elastic(throughputs, model)
    if scheme == "average-mxnet":
        _check(throughputs, model)
        return mxnet_shares(model_name or "", throughputs, model)
    raise ValueError(f"scheme: expected one of {sorted(SCHEMES)}, got {scheme!r}")
