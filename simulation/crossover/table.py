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


def verdict(times: dict[str, float]) -> dict[str, Any]:
    """The map's reading of one point's times (any unit, by scheme; the INA schemes and
    collectives it has, at least one of each): the best collective, each INA scheme over it,
    the best INA over it (< 1: INA wins) and the winner."""
    colls = [s for s in COLLECTIVES if s in times]
    inas = [s for s in INA if s in times]
    best_coll = min(colls, key=times.__getitem__)
    best_ina = min(inas, key=times.__getitem__)
    ratio = times[best_ina] / times[best_coll]
    return {"best_collective": best_coll,
            **{f"{s}/best": round(times[s] / times[best_coll], 4) for s in inas},
            "ina/best": round(ratio, 4), "winner": best_ina if ratio < 1 else best_coll}


def row(cell: Cell, times: dict[str, float], workers: int) -> dict[str, Any]:
    """One CSV row: the cell, each scheme's ms, the best collective and the ratios."""
    host_us, pps = host_figures(cell.host)
    out: dict[str, Any] = {
        "slice": cell.slice, "k": cell.k, "workers": workers, "link_gbps": cell.link_gbps,
        "ps": cell.ps, "ps_count": cell.ps_count, "host": cell.host, "host_us": host_us,
        "ina_pps": pps if pps is not None else "", "switch": cell.switch, "model": cell.model,
        "seed": cell.seed}
    out.update({f"{s}_ms": round(times[s] * 1e3, 6) for s in (*INA, *COLLECTIVES)})
    return out | verdict(times)


# ---- the emulable cells: emulated and simulated side by side ---------------------------------

SIDES = ("emu", "sim")
READING = ("best_collective", *(f"{s}/best" for s in INA), "ina/best", "winner")
CALIBRATION_COLUMNS = (
    "topology", "k", "workers", "ps_count", "link_mbps", "scale_mbps_per_unit", "switch",
    "host_us", "host_source", "model", "model_bytes", "seeds", "rounds",
    *(f"{side}_{s}_ms" for s in (*INA, *COLLECTIVES) for side in SIDES),
    *(f"{side}_{c}" for side in SIDES for c in READING), "same_side")


def readable(schemes: set[str], what: str) -> None:
    """ValueError (``what`` then what is missing) unless ``schemes`` hold an INA scheme and a
    collective of the map: its reading compares the best of each."""
    if not schemes & set(INA) or not schemes & set(COLLECTIVES):
        raise ValueError(f"{what}one of {', '.join(INA)} and one of {', '.join(COLLECTIVES)} "
                         f"(has {', '.join(sorted(schemes)) or 'none'})")


def side_by_side(result: dict[str, Any]) -> dict[str, Any]:
    """One calibration row from a comparison of `inart bench calibrate`
    (emulation/bench/calibrate.py ``calibrate``: its ``setup`` and per scheme ``emu_comm_s``
    and ``sim_comm_s``): the point as a cell of the map (fat-tree k, workers, PSs, link
    Mbit/s, the switch preset its plans assume, the hosts' us per message, the model), each
    scheme's ms on both sides, the map's reading of each side and whether both put the point
    on the same side of the crossover (INA / best collective below 1 on both, or on neither).
    ValueError if it lacks an INA scheme or a collective of the map."""
    from control_plane.model.topologies import build_topology
    from simulation.hardware import preset_of

    setup = result["setup"]
    times = {side: {s["scheme"]: s[f"{side}_comm_s"] for s in result["schemes"]
                    if s["scheme"] in (*INA, *COLLECTIVES)} for side in SIDES}
    readable(set(times["emu"]), f"{setup['topology']}: expected runs of ")
    topo = build_topology(setup["topology"])
    scale = setup["scale_mbps_per_unit"]
    link = max(lk.capacity for lk in topo.links.values())
    switch = preset_of(topo, scale * 1e6)
    if switch is None:
        shares = sorted({round(topo.nodes[v].capacity / max(
            topo.links[(v, nb)].capacity for nb in topo.graph[v]), 4) for v in topo.switches})
        switch = f"topology ({'/'.join(f'{x:g}' for x in shares)} x link)"
    spec = setup["topology"]
    out: dict[str, Any] = {
        "topology": spec,
        "k": int(spec.split(":")[1]) if spec.startswith("fattree:") else "",
        "workers": len(topo.workers), "ps_count": len(topo.pss),
        "link_mbps": round(link * scale, 6), "scale_mbps_per_unit": scale, "switch": switch,
        "host_us": setup["host_overhead_us"], "host_source": setup.get("host_overhead_source", ""),
        "model": setup["model"], "model_bytes": setup["model_bytes"],
        "seeds": ",".join(str(x) for x in sorted({s["seed"] for s in result["schemes"]})),
        "rounds": setup.get("rounds", "")}
    for side in SIDES:
        out.update({f"{side}_{s}_ms": round(t * 1e3, 3) for s, t in times[side].items()})
        out.update({f"{side}_{c}": v for c, v in verdict(times[side]).items()})
    out["same_side"] = (out["emu_ina/best"] < 1) == (out["sim_ina/best"] < 1)
    return out


def side_line(r: dict[str, Any]) -> str:
    """One labelled line of a calibration row."""
    def reading(side: str) -> str:
        ratio, best = r[f"{side}_ina/best"], r[f"{side}_best_collective"]
        return (f"{ratio:.3f} ({r[f'{side}_winner']} wins over {best})" if ratio < 1
                else f"{ratio:.3f} ({best} wins)")

    agree = ("same side of the crossover" if r["same_side"]
             else "NOT on the same side of the crossover")
    return (f"crossover.calibration[{r['topology']}, {r['link_mbps']:g} Mbit/s links, "
            f"C(v) {r['switch']}, {r['host_us']:g} us/message, {r['model']}]: "
            f"INA/best collective emulated {reading('emu')}, simulated {reading('sim')}: "
            f"{agree}")


def to_csv(rows: list[dict[str, Any]], columns: tuple[str, ...] = COLUMNS) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns))
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
