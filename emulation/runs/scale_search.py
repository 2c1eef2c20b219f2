"""`inart emulate --find-max-scale`: the largest traffic scale at which the emulation still
carries every scheme's plan, and what stops it there.

The scale (Mbit/s per topology capacity unit) sets both the links' shaped rates and the hosts'
paced rates, so a larger scale is the same plan with more traffic per second.  A scale holds
when every scheme's measured sending rate is at least ``RATE_GOAL`` of its plan and every
aggregate is exact.  The sweep stops after the first scale that fails; the limit is named from
what was measured at that scale: memory (peak PSS over the budget), the CPU (the machine busy,
split between the switches and the hosts), or frames the switches lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from emulation.targets.embedded.stats import PROGRAM_DROPS

RATE_GOAL = 0.95  # goal: sending rate / planned >= 0.95 per scheme
MEMORY_BUDGET_MB = 4096.0  # goal: the whole fattree:6 emulation within 4 GB
CPU_SATURATED = 0.9  # machine busy fraction above which the CPU is the bottleneck


@dataclass
class ScaleResult:
    """One scale's runs: every scheme's row and the whole emulation's peak PSS and wall time."""

    scale: float
    rows: list[dict]
    peak_pss_mb: float
    wall_s: float
    error: str = ""  # the run did not finish (e.g. a deadline passed): the scale fails

    @property
    def holds(self) -> bool:
        return not self.error and bool(self.rows) and all(
            r["plan_ratio"] >= RATE_GOAL and r["exact"] is not False for r in self.rows)


def parse_scales(text: str) -> list[float]:
    """``0.01,0.02,0.05`` -> increasing positive floats; ValueError naming the option."""
    try:
        scales = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--find-max-scale {text!r}: expected comma-separated numbers, "
                         f"e.g. 0.01,0.02,0.05") from None
    if not scales or any(not s > 0 for s in scales) or scales != sorted(set(scales)):
        raise ValueError(f"--find-max-scale {text!r}: expected increasing scales > 0")
    return scales


def search(scales: list[float], run_at: Callable[[float], ScaleResult],
           report: Callable[[ScaleResult], None] = lambda _: None) -> list[ScaleResult]:
    """Run ``run_at`` for each scale in order until one does not hold (it is included)."""
    out = []
    for scale in scales:
        result = run_at(scale)
        report(result)
        out.append(result)
        if not result.holds:
            break
    return out


def lost_frames(row: dict) -> int:
    """Frames the target lost for reasons other than the program's own decisions."""
    return sum(n for counts in row.get("target_drops", {}).values()
               for reason, n in counts.items() if reason not in PROGRAM_DROPS)


def limit(result: ScaleResult, budget_mb: float = MEMORY_BUDGET_MB) -> str:
    """What, by the measurements of ``result``, keeps it from a larger scale."""
    if result.error:
        return f"the run failed: {result.error.splitlines()[0]}"
    reasons = []
    if result.peak_pss_mb > budget_mb:
        reasons.append(f"memory: peak PSS {result.peak_pss_mb:.0f} MB > {budget_mb:.0f} MB")
    worst = min(result.rows, key=lambda r: r["plan_ratio"], default=None)
    if worst is not None:
        busy = worst.get("machine_busy", 0.0)
        sw, hosts = worst.get("switch_cores", 0.0), worst.get("host_cores", 0.0)
        cpu = (f"CPU {busy:.0%} busy ({worst.get('cpus', 0)} cores): switches "
               f"{sw:.2f} cores, hosts {hosts:.2f} cores")
        if busy >= CPU_SATURATED:
            who = "the switches" if sw >= hosts else "the hosts"
            reasons.append(f"{cpu}: saturated, mostly by {who}")
        lost = lost_frames(worst)
        if lost:
            reasons.append(f"the switches lost {lost} frames ({worst['scheme']})")
        if not reasons:
            reasons.append(f"{cpu}; none saturated, no frames lost by the switches")
        if not result.holds:
            reasons.insert(0, f"{worst['scheme']} sent at {worst['plan_ratio']:.2f} of its plan"
                              + (", WRONG SUMS" if worst["exact"] is False else ""))
    return "; ".join(reasons)


def summary(results: list[ScaleResult]) -> list[str]:
    """The lines `inart emulate --find-max-scale` ends with."""
    held = [r for r in results if r.holds]
    lines = []
    if held:
        best = held[-1]
        lines.append(f"largest scale reached: {best.scale:g} Mbit/s per unit (every scheme's "
                     f"rate >= {RATE_GOAL} of plan, exact sums), wall {best.wall_s:.0f} s, "
                     f"peak PSS {best.peak_pss_mb:.0f} MB")
    else:
        lines.append(f"no scale held (tried {results[0].scale:g})" if results else
                     "no scale tried")
    if results:
        last = results[-1]
        tag = "limit" if not last.holds else "at the largest scale tried"
        lines.append(f"{tag} (scale {last.scale:g}): {limit(last)}")
    return lines
