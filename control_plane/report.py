"""Plan summaries as rows for tables, CSV and JSON (shared by `inart plan` and the benchmarks).

Communication time per iteration is estimated as the model's gradient bits over the plan's
worker rate, with one topology unit = `unit_mbps` Mbit/s (the paper's presets are in Mbit/s,
scaled by 1/1000 from its testbed): e.g. LSTM at 8.73 Mbit/s gives 1.49 s.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from control_plane.model.plan import Plan

# gradient size per iteration of the InArt paper's emulated models (KB)
MODELS_KB = {"lstm": 1627, "vgg19": 548, "resnet50": 97}


def plan_row(plan: Plan, unit_mbps: float = 1.0) -> dict[str, Any]:
    """One summary row: rate, bound, PS ingress, busiest switch and link, time, comm times."""
    loads = plan.evaluate()
    topo = plan.topology
    at = loads.at(plan.rate)
    row: dict[str, Any] = {
        "scheme": plan.scheme,
        "rate": round(plan.rate, 4),
        "upper_bound": None if plan.upper_bound is None else round(plan.upper_bound, 4),
        "binding": loads.binding,
        "ps_ingress": {s: round(v, 3) for s, v in sorted(at["ps"].items())},
    }
    if at["switch"]:
        v, load = max(at["switch"].items(), key=lambda kv: kv[1] / max(topo.nodes[kv[0]].spare,
                                                                      1e-12))
        row["busiest_switch"] = f"{v} {load:.2f}/{topo.nodes[v].spare:g}"
    else:
        row["busiest_switch"] = "-"
    name, load = max(at["link"].items(), key=lambda kv: kv[1] / max(
        topo.links[tuple(kv[0].split("->"))].spare, 1e-12))
    row["busiest_link"] = f"{name} {load:.2f}/{topo.links[tuple(name.split('->'))].spare:g}"
    row["solve_s"] = plan.meta.get("solve_seconds")
    for model, kb in MODELS_KB.items():
        bits = kb * 1024 * 8
        rate_bps = plan.rate * unit_mbps * 1e6
        row[f"comm_s_{model}"] = round(bits / rate_bps, 4) if rate_bps > 0 else None
    return row


def format_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """Plain-text table with aligned columns."""
    if not rows:
        return "(no rows)"
    columns = columns or list(rows[0])

    def cell(v: Any) -> str:
        if isinstance(v, dict):
            return " ".join(f"{k}={x:g}" for k, x in v.items())
        if isinstance(v, float):
            return f"{v:.4g}"
        return "-" if v is None else str(v)

    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def to_csv(rows: list[dict[str, Any]]) -> str:
    """CSV text; dict cells are flattened to key=value lists."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    for r in rows:
        writer.writerow({k: (" ".join(f"{a}={b}" for a, b in v.items()) if isinstance(v, dict)
                             else v) for k, v in r.items()})
    return buf.getvalue()
