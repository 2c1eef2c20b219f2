"""The figures `inart bench solver` prints against its goals, one labelled line each.

Per fat-tree size: inart/atp and inart/upper_bound (the worst instance: the goals hold "on
every seed"), and the end-to-end solve time (median over the instances, wall clock and this
process's CPU time; on a shared machine the wall time grows with the load, the CPU time
much less).  For `--random N`: inart/MILP, the worst instance.
"""

from __future__ import annotations

import os
import statistics

# (figure, fat-tree k) -> (comparison, goal); fat-trees with 4 PSs
GOALS: dict[tuple[str, int], tuple[str, float]] = {
    ("inart/atp", 6): (">=", 2.0),
    ("inart/bound", 6): (">=", 0.9),
    ("inart/bound", 8): (">=", 0.85),
    ("e2e", 6): ("<=", 1.0),
    ("e2e", 8): ("<=", 5.0),
    ("e2e", 16): ("<=", 120.0),
}
RANDOM_GOAL = (">=", 0.97)
PLAN_WALL_GOAL = ("<=", 900.0)  # `inart plan` at fattree:32 on a 2-core machine: 15 min
PLAN_MEM_GOAL = ("<=", 8.0)  # and 8 GB peak


def figure(name: str, value: float, unit: str, goal: tuple[str, float] | None,
            **extra: object) -> dict:
    out: dict = {"name": name, "value": round(value, 4), "unit": unit}
    if goal is not None:
        op, target = goal
        out.update(goal=f"{op} {target:g}", ratio=round(value / target, 3),
                   met=value >= target if op == ">=" else value <= target)
    return out | extra


def fattree_figures(rows: list[dict]) -> list[dict]:
    """Worst ratios and median solve time per fat-tree size in `rows` (bench rows)."""
    out = []
    for k in sorted({int(r["topology"].split(":")[1]) for r in rows}):
        mine = [r for r in rows if r["topology"] == f"fattree:{k}"]
        where = {"instances": len(mine),
                 "presets": ",".join(sorted({r["preset"] for r in mine})),
                 "seeds": ",".join(str(s) for s in sorted({r["seed"] for r in mine}))}
        for key, column in (("inart/atp", "inart/atp"), ("inart/bound", "inart/ub")):
            worst = min(mine, key=lambda r: r[column])
            out.append(figure(f"solver.{key}[fattree:{k}]", worst[column], "x",
                               GOALS.get((key, k)), worst=f"{worst['preset']} seed "
                               f"{worst['seed']}", **where))
        wall = [r["inart_e2e_s"] for r in mine]
        cpu = [r["inart_e2e_cpu_s"] for r in mine]
        out.append(figure(f"solver.e2e[fattree:{k}]", statistics.median(wall), "s",
                           GOALS.get(("e2e", k)), max=max(wall),
                           cpu_median=round(statistics.median(cpu), 3), cpu_max=max(cpu),
                           load=round(os.getloadavg()[0], 2), **where))
    return out


def random_figure(summary: dict, shape: str | None = None) -> dict:
    """inart/MILP on the worst random instance (of one shape)."""
    where = f"{shape} x{summary['instances']}" if shape else f"random {summary['instances']}"
    return figure(f"solver.inart/milp[{where}]",
                   summary["inart/milp_min"], "x", RANDOM_GOAL,
                   mean=summary["inart/milp_mean"], at_goal=summary[">=0.97"],
                   with_milp=summary["with_milp"], proven=summary["milp_proven"],
                   worst=summary["worst"])


def scale_figures(rows: list[dict]) -> list[dict]:
    """Per `inart plan` run at scale: wall time and peak memory against the goals, and the
    plan's rate over its bound (no goal: the bound is loose at this size)."""
    out = []
    for r in rows:
        where = f"{r['topology']} {r['scheme']}"
        extra = {"cpu_s": r["cpu_s"], "rc": r["rc"], "load": round(os.getloadavg()[0], 2)}
        out.append(figure(f"solver.plan_wall[{where}]", r["wall_s"], "s", PLAN_WALL_GOAL,
                           **extra))
        out.append(figure(f"solver.plan_peak[{where}]", r["peak_gb"], "GB", PLAN_MEM_GOAL))
        if r.get("rate/bound") is not None:
            out.append(figure(f"solver.plan_rate/bound[{where}]", r["rate/bound"], "x", None,
                               rate=r["rate"], upper_bound=r["upper_bound"]))
    return out


def line(fig: dict) -> str:
    """One labelled line: name, value, unit, ratio, goal (met or NOT MET), then the details."""
    ratio = f"ratio {fig['ratio']:.3f}  " if isinstance(fig.get("ratio"), int | float) else ""
    goal = (f"{ratio}goal {fig['goal']}: {'met' if fig['met'] else 'NOT MET'}"
            if "goal" in fig else f"{ratio}no goal")
    rest = "; ".join(f"{k} {v}" for k, v in fig.items()
                     if k not in ("name", "value", "unit", "goal", "ratio", "met"))
    return f"{fig['name']:32s} {fig['value']:8.3f} {fig['unit']:2s}  {goal}  ({rest})"
