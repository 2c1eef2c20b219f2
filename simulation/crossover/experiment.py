"""`inart experiment crossover`: where in-network aggregation beats ring, tree and RSGCM.

For every cell of the grid (fat-tree k, link Gbit/s, PSs per job, host cost per collective
message, switch preset, model) it simulates InArt and ATP (plans solved on the cell's
cluster, C(v) from the switch preset) and the ring, RAT tree and RSGCM (the hosts' cost per
message from the host axis), one Ray task per distinct run on a local Ray head (or
--ray-address), and writes OUT/crossover.csv (every cell: each scheme's ms, the best collective,
INA/best ratios) and heatmap PNGs (the ratio over each slice's two axes, one per value of
any other axis it varies; the black line is the crossover, ratio 1).  Grids: --grid quick |
small | full or a YAML file (examples/crossover.yaml); presets and their sources: `inart
simulate --preset NAME --explain`; the maps' reading: docs/where-ina-wins.md.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from control_plane.cli.args import (
    InputError,
    RunFailed,
    add_json,
    fresh_out,
    progress,
    record_outputs,
    write_json,
)
from simulation.crossover.grid import BUILTIN_GRIDS, GridError, Slice, load_grid
from simulation.crossover.table import heatmaps, row, to_csv
from simulation.crossover.tasks import Task, run_task, tasks_of


def configure(parser: argparse.ArgumentParser) -> None:
    from host_stack.cli.experiment import add_common_args

    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--grid", default=None, metavar="GRID",
                        help=f"{' | '.join(BUILTIN_GRIDS)} or a YAML file with slices: "
                             f"(default small)")
    parser.add_argument("--ray-address", metavar="HOST:PORT",
                        help="an existing Ray cluster's head (default: a head started here)")
    parser.add_argument("--cpus", type=int, help="runs at once on the local head (default: "
                                                 "cores)")
    add_json(parser, "the grid, every run and every cell (default: OUT/crossover.json)")
    add_common_args(parser, "crossover", 1, "PS placement, solver and RSGCM seeds",
                    "the quick grid (k 4 and 6, two host costs, two switch presets)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    args.grid = "quick" if args.quick else args.grid or "small"
    try:
        slices = load_grid(args.grid)
    except GridError as exc:
        raise InputError(str(exc)) from exc
    cells = [c for sl in slices for c in sl.cells(args.seeds)]
    if not cells:
        raise InputError(f"--grid {args.grid}: no cell leaves a worker (PSs >= hosts)")
    needs = {cell: tasks_of(cell) for cell in cells}
    tasks = sorted({t for by_scheme in needs.values() for t in by_scheme.values()},
                   key=lambda t: -t.cost)
    t0 = time.perf_counter()
    results = run_tasks(tasks, args.ray_address, args.cpus, args.quiet)
    wall = time.perf_counter() - t0
    rows = [row(cell, {s: results[t]["comm_time_s"] for s, t in by_scheme.items()},
                results[by_scheme["ring"]]["workers"]) for cell, by_scheme in needs.items()]
    out = fresh_out(args.out)
    written = [out / "crossover.csv"]
    written[0].write_text(to_csv(rows))
    for sl in slices:
        written += heatmaps(rows, sl, out)
    busy = sum(r["sim_wall_s"] for r in results.values())
    summary = {"grid": args.grid,
               "slices": [_slice_dict(s) for s in slices], "seeds": args.seeds,
               "cells": len(cells), "runs": len(tasks), "wall_s": round(wall, 1),
               "simulation_s": round(busy, 1)}
    document = {"summary": summary, "rows": rows,
                "runs": [t.to_dict() | results[t] for t in tasks]}
    written.append(out / "crossover.json")
    write_json(written[-1], document)
    record_outputs(out, written)
    wins = sum(1 for r in rows if r["ina/best"] < 1)
    print(f"{len(cells)} cells, {len(tasks)} simulations in {wall:.0f} s of wall time "
          f"({busy:.0f} s of simulation summed over the runs); INA wins {wins} of "
          f"{len(rows)} cells")
    print(f"wrote {', '.join(str(w) for w in written)}")
    if args.json:
        write_json(args.json, document)
    return 0


def run_tasks(tasks: list[Task], address: str | None, cpus: int | None,
              quiet: bool) -> dict[Task, dict[str, Any]]:
    """Every task on Ray, one CPU each, longest first; RunFailed naming the first that
    failed."""
    from control_plane.sweep.cluster import ClusterError
    from control_plane.sweep.engine import connected

    results: dict[Task, dict[str, Any]] = {}
    try:
        with connected(address, cpus) as ray:
            remote = ray.remote(run_task).options(num_cpus=1, max_retries=1)
            pending = {remote.remote(t.to_dict()): t for t in tasks}
            with progress(total=len(tasks), desc="crossover", unit="run", quiet=quiet) as bar:
                while pending:
                    # a timeout, so that Ctrl-C reaches this loop within a second
                    ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                    if not ready:
                        continue
                    task = pending.pop(ready[0])
                    try:
                        results[task] = ray.get(ready[0])
                    except ray.exceptions.RayError as exc:
                        raise RunFailed(f"{task.scheme} on fattree:{task.k} ({task.ps} PSs, "
                                        f"{task.link_gbps:g} Gbit/s, {task.model}): "
                                        f"{str(exc).strip().splitlines()[-1]}") from exc
                    bar.set_postfix(k=task.k, scheme=task.scheme)
                    bar.update(1)
    except ClusterError as exc:
        raise RunFailed(str(exc)) from exc
    return results


def _slice_dict(sl: Slice) -> dict[str, Any]:
    return {"name": sl.name, "x": sl.x, "y": sl.y, **sl.axes}

