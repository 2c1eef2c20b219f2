"""A sweep's results on disk: one JSON line per finished point, appended (and synced) the
moment it finishes, so a crash of the driver, a worker or the machine keeps every point
finished before it; then one table, results.csv and results.json from those lines."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

from control_plane.report import format_table
from control_plane.sweep.grid import Point

RESULTS = "results.jsonl"
GRID = "grid.json"  # the grid a sweep directory was made for (what --resume runs again)
OK, FAILED = "ok", "failed"
POINT_COLUMNS = ("kind", "topology", "scheme", "link_gbps", "model", "seed")
# the table's measurement columns, those present in any row, in this order
TABLE_COLUMNS = ("rate_units", "upper_bound_units", "rate_per_worker_bps", "comm_time_s",
                 "iteration_time_s", "plan_comm_time_s", "solve_s", "wall_s")


class ResultLog:
    """The append-only results file of one sweep directory."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / RESULTS

    def append(self, row: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(row, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def rows(self) -> list[dict[str, Any]]:
        """Every line, in order; a last line cut short by a crash is left out."""
        if not self.path.is_file():
            return []
        rows = []
        for line in self.path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return rows

    def latest(self) -> dict[str, dict[str, Any]]:
        """Point key -> its last row (a point rerun after a failure counts once)."""
        return {r["key"]: r for r in self.rows()}

    def done(self) -> set[str]:
        """Keys of the points that finished without failing."""
        return {k for k, r in self.latest().items() if r.get("status") == OK}


def row_for(point: Point, status: str, measured: dict[str, Any] | None = None,
            error: str | None = None) -> dict[str, Any]:
    """One results line: the point's key and axes, its status, its measurements (a runner's
    value never replaces the point's own fields)."""
    row: dict[str, Any] = {"key": point.key, **point.to_dict(), "status": status}
    if error is not None:
        row["error"] = error
    row.update({k: v for k, v in (measured or {}).items() if k not in row})
    return row


def ordered(rows: dict[str, dict[str, Any]], points: list[Point]) -> list[dict[str, Any]]:
    """The grid's rows in grid order (rows of other grids in the file are left out)."""
    return [rows[p.key] for p in points if p.key in rows]


def table(rows: list[dict[str, Any]]) -> str:
    """The stdout table: the axes that vary, status, the measurements the rows have."""
    axes = [c for c in POINT_COLUMNS if len({str(r.get(c)) for r in rows}) > 1] or ["scheme"]
    measured = [c for c in TABLE_COLUMNS if any(r.get(c) is not None for r in rows)]
    shown = [{**r, "status": r["status"] if r["status"] == OK else
              f"{FAILED}: {str(r.get('error', ''))[:60]}"} for r in rows]
    return format_table(shown, [*axes, *measured, "status"])


def write_tables(rows: list[dict[str, Any]], directory: Path) -> tuple[Path, Path]:
    """results.csv (every column any row has; dicts as key=value lists) and results.json."""
    columns: list[str] = []
    for r in rows:
        columns += [c for c in r if c not in columns]
    csv_path, json_path = directory / "results.csv", directory / "results.json"
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: " ".join(f"{a}={b}" for a, b in v.items())
                             if isinstance(v, dict) else v for k, v in r.items()})
    json_path.write_text(json.dumps(rows, indent=1, default=str) + "\n")
    return csv_path, json_path
