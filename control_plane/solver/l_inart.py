"""Phase 1, L-InArt: the model split x_s from the InArt paper's relaxation (Eq. 2) via KKT.

Eq. 2 keeps only switch and PS capacities and relaxes y, z to [0, 1].  In rate variables
(g_s = f x_s, h_s = aggregated part of g_s, spread evenly over workers so z = y) it reads

    max sum_s g_s   s.t.  W g_s - (W-1) h_s <= B_s   (theta_s)   PS ingress
                          h_s - g_s <= 0              (rho_s)     aggregate at most all
                          W sum_s h_s <= A            (alpha)     A = sum_v C(v) - c(v)

Stationarity (1 - W theta_s + rho_s = 0, (W-1) theta_s - rho_s - W alpha = 0) with
complementary slackness has the closed form below: with lambda = min(1, A / (W sum_s B_s)),
h_s = lambda B_s and g_s = B_s (1 + (W-1) lambda) / W.  If lambda < 1 the switches bind:
theta_s = 1/W, rho_s = 0, alpha = (W-1)/W^2; otherwise the PSs bind: theta_s = 1,
rho_s = W-1, alpha = 0.  Eq. 2's optimum is degenerate in how h is spread over PSs; we pick
h_s proportional to B_s, which gives x_s proportional to spare PS capacity.  Eq. 2 ignores
links and routing, so on symmetric clusters (fig1) it returns an equal split; `solve` then
refines the split against the rounded routing (see resplit.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from control_plane.model.topology import Topology, TopologyError


@dataclass
class LInArtResult:
    """The split and the KKT certificate of Eq. 2's optimum."""

    split: dict[str, float]
    rate: float  # Eq. 2's optimum f (an upper bound that ignores links)
    lam: float
    theta: dict[str, float]
    rho: dict[str, float]
    alpha: float

    def describe(self) -> str:
        """Multipliers for debug output."""
        th = ", ".join(f"{s}={v:.4g}" for s, v in self.theta.items())
        rh = ", ".join(f"{s}={v:.4g}" for s, v in self.rho.items())
        return (f"L-InArt: f*={self.rate:.6g} lambda={self.lam:.4g} alpha={self.alpha:.4g} "
                f"theta=({th}) rho=({rh})")


def l_inart(topo: Topology) -> LInArtResult:
    """Solve Eq. 2 in closed form from its KKT conditions."""
    W = len(topo.workers)
    spare = {s: max(topo.nodes[s].spare, 0.0) for s in topo.pss}
    total_b = sum(spare.values())
    if total_b <= 0:
        raise TopologyError("every PS has zero spare capacity (capacity - background): "
                            "no split can carry gradients")
    switch_cap = sum(max(topo.nodes[v].spare, 0.0) for v in topo.switches)
    lam = min(1.0, switch_cap / (W * total_b)) if W > 1 else 0.0
    g = {s: b * (1 + (W - 1) * lam) / W for s, b in spare.items()}
    rate = sum(g.values())
    if lam < 1.0:
        theta = {s: 1.0 / W for s in spare}
        rho = {s: 0.0 for s in spare}
        alpha = (W - 1) / W**2
    else:
        theta = {s: 1.0 for s in spare}
        rho = {s: W - 1.0 for s in spare}
        alpha = 0.0
    return LInArtResult({s: v / rate for s, v in g.items()}, rate, lam, theta, rho, alpha)
