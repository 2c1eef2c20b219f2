"""The map's table and heatmaps: per cell every scheme's communication time and the ratio
that decides the question, INA over the best collective (< 1: INA wins)."""

from __future__ import annotations

import csv
import io
import math
import statistics
from pathlib import Path
from typing import Any

from simulation.crossover.grid import Cell, Slice
from simulation.crossover.tasks import COLLECTIVES, INA, host_figures

COLUMNS = ("slice", "k", "workers", "link_gbps", "ps", "ps_count", "host", "host_us",
           "ina_pps", "switch", "model", "seed", *(f"{s}_ms" for s in (*INA, *COLLECTIVES)),
           "best_collective", "inart/best", "atp/best", "ina/best", "winner")


def row(cell: Cell, times: dict[str, float], workers: int) -> dict[str, Any]:
    """One CSV row: the cell, each scheme's ms, the best collective and the ratios."""
    host_us, pps = host_figures(cell.host)
    best_coll = min(COLLECTIVES, key=lambda s: times[s])
    best_ina = min(INA, key=lambda s: times[s])
    ratio = times[best_ina] / times[best_coll]
    out: dict[str, Any] = {
        "slice": cell.slice, "k": cell.k, "workers": workers, "link_gbps": cell.link_gbps,
        "ps": cell.ps, "ps_count": cell.ps_count, "host": cell.host, "host_us": host_us,
        "ina_pps": pps if pps is not None else "", "switch": cell.switch, "model": cell.model,
        "seed": cell.seed}
    out.update({f"{s}_ms": round(times[s] * 1e3, 6) for s in (*INA, *COLLECTIVES)})
    out.update({"best_collective": best_coll,
                "inart/best": round(times["inart"] / times[best_coll], 4),
                "atp/best": round(times["atp"] / times[best_coll], 4),
                "ina/best": round(ratio, 4),
                "winner": best_ina if ratio < 1 else best_coll})
    return out


def to_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(COLUMNS))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _key(value: Any) -> tuple[int, float, str]:
    """Axis order: numbers by value, scaled PSs after counts, names as given."""
    text = str(value)
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def heatmaps(rows: list[dict[str, Any]], sl: Slice, out: Path) -> list[Path]:
    """One PNG per combination of the slice's other multi-valued axes: ina/best over x and
    y (log colour scale centred on 1), the crossover line where it crosses 1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    mine = [r for r in rows if r["slice"] == sl.name]
    others = [a for a, v in sl.axes.items() if len(v) > 1 and a not in (sl.x, sl.y)]
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in mine:
        groups.setdefault(tuple(r[a] for a in others), []).append(r)
    written = []
    for values, group in groups.items():
        xs = sorted({r[sl.x] for r in group}, key=_key)
        ys = sorted({r[sl.y] for r in group}, key=_key)
        grid = np.full((len(ys), len(xs)), np.nan)
        for (i, y), (j, x) in ((iy, jx) for iy in enumerate(ys) for jx in enumerate(xs)):
            ratios = [r["ina/best"] for r in group if r[sl.x] == x and r[sl.y] == y]
            if ratios:
                grid[i, j] = statistics.median(ratios)
        fig, ax = plt.subplots(figsize=(1.2 * len(xs) + 3, 0.6 * len(ys) + 2.2))
        logs = np.log10(grid[~np.isnan(grid)])
        span = max(abs(logs).max(), 0.1) if logs.size else 1.0
        img = ax.imshow(np.log10(grid), cmap="RdBu_r", origin="lower", aspect="auto",
                        norm=TwoSlopeNorm(0.0, -span, span))
        for i in range(len(ys)):
            for j in range(len(xs)):
                if not math.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.2g}", ha="center", va="center", fontsize=8)
        if len(xs) > 1 and len(ys) > 1 and logs.size and logs.min() < 0 < logs.max():
            ax.contour(np.ma.masked_invalid(np.log10(grid)), levels=[0.0], colors="black",
                       linewidths=2)
        ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        ax.set_yticks(range(len(ys)), [str(y) for y in ys])
        ax.set_xlabel(_LABELS.get(sl.x, sl.x))
        ax.set_ylabel(_LABELS.get(sl.y, sl.y))
        fixed = {a: sl.axes[a][0] for a in sl.axes if len(sl.axes[a]) == 1}
        fixed.update(zip(others, values, strict=True))
        ax.set_title("best INA / best collective (< 1: INA wins; line: 1)\n" +
                     ", ".join(f"{a}={v}" for a, v in fixed.items()), fontsize=8)
        bar = fig.colorbar(img, ax=ax)
        bar.set_label("log10 ratio")
        fig.tight_layout()
        name = "-".join([sl.name, *(f"{a}{v}" for a, v in zip(others, values, strict=True))])
        path = out / f"{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


_LABELS = {"k": "fat-tree k", "ps": "PSs per job", "host": "host us per collective message",
           "link_gbps": "link Gbit/s", "switch": "switch preset", "model": "model"}
