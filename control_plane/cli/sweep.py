"""`inart sweep`: a grid of runs (topology x scheme x link speed x model x seed) in parallel.

    inart sweep --kind plan -t fig1,fattree:4 -s inart,atp,lbmm --link-gbps 10,100 \
                --model resnet50 --seeds 0-2
    inart sweep --grid grid.yaml [--ray-address HOST:PORT] [--out DIR]
    inart sweep --resume out/sweep/20260101-120000

Without --ray-address a Ray head is started on this machine for the sweep (every core; its
ports are free ones, no dashboard) and stopped after it; with one, the points run on that
cluster (every node needs the same inart at the same path: docs/sweeps.md).  Each finished
point is appended at once to OUT/results.jsonl, so an interrupted sweep keeps what finished
and --resume DIR runs only the rest; a point whose worker died is retried once, then recorded
as failed with the reason.  At the end: one table, OUT/results.csv and OUT/results.json.
The exit status is 1 when a point failed.

A grid file (YAML) has the same fields: kind, topologies, schemes, link_gbps, models, seeds
(lists or comma strings) and settings (a mapping); flags given beside it replace its fields.
--set KEY=VALUE (repeatable) adds a setting every point gets: plan: k_paths, trials,
rounding; simulate: iterations, latency_us, compute_s, pace; emulate: scale (Mbit/s per
unit), rounds, values, deadline_s, lock_wait_s, and cluster=SERVERS_YAML: every point's
network spread over the servers of the file `inart emulate --cluster` reads (checked when
the sweep starts; made an absolute path, at which every node that runs emulations must
have it; each row then says where each node ran and which tunnel each link got).  A
setting the kind does not read is refused, cluster for plan and simulate too.

    sudo inart sweep --kind emulate -t fig1 -s inart,atp --set cluster=servers.yaml
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from control_plane.cli.args import InputError, add_quiet, add_topology, command, seed_list
from control_plane.repo import out_dir
from control_plane.sweep.cluster import ClusterError
from control_plane.sweep.engine import run_sweep
from control_plane.sweep.grid import Grid, GridError, build_grid, load_grid_file
from control_plane.sweep.kinds import KINDS
from control_plane.sweep.results import GRID, RESULTS, table, write_tables

# flag -> grid field
AXIS_FLAGS = {"kind": "kind", "topology": "topologies", "scheme": "schemes",
              "link_gbps": "link_gbps", "model": "models", "seeds": "seeds"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = command(subparsers, "sweep", "run a grid of plans/simulations/emulations in parallel",
                __doc__)
    p.add_argument("--kind", choices=sorted(KINDS), default=None,
                   help="what each point runs (default plan): " +
                        "; ".join(f"{k.name}: {k.doc}" for k in KINDS.values()))
    add_topology(p, many=True, default=None,
                 help_text="comma-separated, repeatable: fig1, fattree:K, leafspine:L,S,H, "
                           "FILE.json (each built before the sweep starts)")
    p.add_argument("-s", "--scheme", metavar="SCHEME[,SCHEME...]",
                   help="comma-separated schemes of the kind, or all (every scheme the kind "
                        "runs)")
    p.add_argument("--link-gbps", dest="link_gbps",
                   help="comma-separated link speeds in Gbit/s (the fastest link's; the others "
                        "keep their ratios), or 'topology': its capacities, one unit 1 Gbit/s "
                        "(plan, simulate)")
    p.add_argument("--model", metavar="MODEL[,MODEL...]",
                   help="comma-separated: resnet50, vgg19, lstm, synthetic:BYTES, "
                        "PROFILE.json (plan, simulate; `inart simulate`'s models)")
    p.add_argument("--seeds", type=seed_list, metavar="SEEDS",
                   help="seeds: N, N-M or a comma list (0-2 is 0, 1, 2; default 0)")
    p.add_argument("--grid", type=Path, help="YAML grid file (flags replace its fields)")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting every point gets (repeatable)")
    p.add_argument("--ray-address", metavar="HOST:PORT",
                   help="an existing Ray cluster's head (default: a head started here)")
    p.add_argument("--cpus", type=int, help="points at once on the local head (default: cores)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="sweep directory (default out/sweep/<time>: a new one per sweep)")
    p.add_argument("--resume", type=Path, metavar="DIR",
                   help="run the points of DIR's grid that have not finished (same DIR)")
    add_quiet(p)
    p.set_defaults(func=run)


def parse_settings(items: list[str]) -> dict[str, Any]:
    """--set KEY=VALUE -> {KEY: VALUE as YAML reads it (numbers, booleans, strings)}."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise GridError(f"--set {item!r}: expected KEY=VALUE")
        out[key.strip()] = yaml.safe_load(value)
    return out


def grid_from_args(args: argparse.Namespace) -> tuple[Grid, Path]:
    """The grid and the sweep directory: DIR's own grid with --resume, else the file and flags."""
    flags = {field: getattr(args, flag) for flag, field in AXIS_FLAGS.items()
             if getattr(args, flag) is not None}
    if args.resume is not None:
        if flags or args.grid or args.settings or args.out:
            raise GridError("--resume: runs the grid saved in its directory; give no grid "
                            "flags, --grid, --set or --out with it")
        saved = args.resume / GRID
        if not saved.is_file():
            raise GridError(f"--resume {args.resume}: no {GRID} there (not a sweep directory)")
        return build_grid(json.loads(saved.read_text()), KINDS), args.resume
    fields = load_grid_file(args.grid) if args.grid else {}
    fields.update(flags)
    fields.setdefault("kind", "plan")
    fields["settings"] = {**fields.get("settings", {}), **parse_settings(args.settings)}
    grid = build_grid(fields, KINDS)
    return grid, args.out or out_dir("sweep") / time.strftime("%Y%m%d-%H%M%S")


def run(args: argparse.Namespace) -> int:
    try:
        if args.cpus is not None and (args.ray_address or args.cpus < 1):
            raise GridError("--cpus: a number >= 1, for the head started here (a cluster's "
                            "nodes give their own with `ray start --num-cpus`)")
        grid, out = grid_from_args(args)
    except GridError as exc:
        raise InputError(str(exc)) from exc
    out.mkdir(parents=True, exist_ok=True)
    saved = out / GRID
    if saved.is_file() and json.loads(saved.read_text()) != grid.to_dict():
        raise InputError(f"{out} holds another grid's results ({saved}); give another --out "
                         f"or --resume {out}")
    saved.write_text(json.dumps(grid.to_dict(), indent=1) + "\n")
    print(f"sweep of {len(grid.points())} {grid.kind} points into {out}", file=sys.stderr)
    try:
        outcome = run_sweep(grid, out, address=args.ray_address, cpus=args.cpus,
                            progress=not args.quiet)
    except (GridError, ClusterError) as exc:
        raise InputError(str(exc)) from exc
    except KeyboardInterrupt:
        print(f"inart sweep: interrupted; the finished points are in {out / RESULTS}: "
              f"--resume {out} runs the rest", file=sys.stderr)
        return 130
    print(table(outcome.rows))
    csv_path, json_path = write_tables(outcome.rows, out)
    skipped = f", {outcome.skipped} already done" if outcome.skipped else ""
    print(f"{len(outcome.rows)} points ({outcome.ran} run{skipped}, {len(outcome.failed)} "
          f"failed); wrote {csv_path} and {json_path}")
    return 1 if outcome.failed else 0
