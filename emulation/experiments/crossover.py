"""`inart experiment crossover`: the map of simulation/crossover/experiment.py, and with
--emulate (or --from saved runs) the map's cells the emulation can carry, emulated and
simulated side by side.

--emulate runs `inart bench calibrate` (emulation/bench/calibrate.py) once per -t topology:
the head-to-head of the INA schemes and collectives on the Mininet emulation (root; the
emulation takes the machine's network lock), at --scale Mbit/s per topology unit, with the
embedded switches' C(v) the plans are solved for (the topology's own: on a fat-tree the
`paper` switch preset), then the hosts' time per message measured on this machine (as
`inart bench message-overhead` does) and the simulation of exactly what was emulated.  Each
point is then read as the map reads a cell (simulation/crossover/table.py): every scheme's
time on both sides, the best INA over the best collective on both sides (< 1: INA wins) and
whether both put the point on the same side of the crossover.  OUT/calibration.csv and
.json, one labelled line per point; --from HEAD_TO_HEAD.json does the same with saved runs.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

from control_plane.cli.args import (
    InputError,
    add_scheme,
    add_topology,
    fresh_out,
    positive,
    record_outputs,
    write_json,
)
from emulation.bench.calibrate import measure, options, table
from simulation.crossover import experiment as simulated
from simulation.crossover.table import (
    CALIBRATION_COLUMNS,
    readable,
    side_by_side,
    side_line,
    to_csv,
)
from simulation.crossover.tasks import COLLECTIVES, INA

SCHEMES = (*INA, *COLLECTIVES)
TOPOLOGY = "fattree:4"
ROUNDS = 8
# Mbit/s per unit of the saved calibrations (docs/simulation-calibration.md): fig1's links
# at 3 Mbit/s, a fat-tree's at 2 (20 embedded switches on the machine's cores keep up)
SCALES = {"fig1": 0.5}
SCALE = 0.1
QUICK = {"topology": ["fig1"], "scheme": ["atp", "ring"], "rounds": 4}
# the map's own options, which a calibration has no use for
MAP_ONLY = {"grid": "--grid", "ray_address": "--ray-address", "cpus": "--cpus"}
EMULATION_ONLY = {"topology": "-t/--topology", "scheme": "-s/--scheme", "scale": "--scale",
                  "rounds": "--rounds"}


def configure(parser: argparse.ArgumentParser) -> None:
    simulated.configure(parser)
    parser.description = f"{simulated.__doc__}\n{__doc__}"
    cal = parser.add_argument_group(
        "calibration", "the map's emulable cells on the emulation and the simulator side by "
                       "side, instead of the grid")
    how = cal.add_mutually_exclusive_group()
    how.add_argument("--emulate", action="store_true",
                     help="emulate each -t topology (root, Mininet) and simulate it as "
                          "`inart bench calibrate` does; with --quick: fig1, atp and ring, "
                          f"{QUICK['rounds']} rounds")
    how.add_argument("--from", dest="source", type=Path, action="append", default=None,
                     metavar="HEAD_TO_HEAD.json",
                     help="the same from a saved head-to-head (repeatable; no emulation)")
    add_topology(cal, many=True, default=TOPOLOGY,
                 help_text=f"with --emulate: the topologies to emulate, comma-separated "
                           f"(default {TOPOLOGY})")
    add_scheme(cal, SCHEMES, ",".join(SCHEMES),
               help_text="with --emulate: at least one INA scheme and one collective")
    cal.add_argument("--scale", type=positive(), default=None, metavar="MBPS",
                     help=f"with --emulate: Mbit/s per topology unit (default "
                          f"{', '.join(f'{t} {v:g}' for t, v in SCALES.items())}, "
                          f"else {SCALE:g})")
    cal.add_argument("--rounds", type=positive(int), default=None,
                     help=f"with --emulate: iterations per scheme, >= 2 (default {ROUNDS})")
    # given or not: None until run() fills them in
    parser.set_defaults(func=run, topology=None, scheme=None)


def run(args: argparse.Namespace) -> int:
    if not (args.emulate or args.source):
        _refuse(args, EMULATION_ONLY, "only with --emulate")
        return simulated.run(args)
    _refuse(args, MAP_ONLY, "not with --emulate or --from (the calibration's cells are the "
                            "emulated topologies)")
    if args.source:
        _refuse(args, EMULATION_ONLY, "not with --from (the saved runs say it)")
        points = [_saved(path) for path in args.source]
    else:
        points = _emulated(args)
    out = fresh_out(args.out)
    load = os.getloadavg()
    t0 = time.perf_counter()
    rows, results = [], []
    for argv in points:
        result = measure(options(argv))
        rows.append(side_by_side(result))
        results.append(result)
        print(f"\n{result['setup']['topology']} emulated vs simulated "
              f"(hosts' time {result['setup']['host_overhead_us']:g} us per message, "
              f"{result['setup']['host_overhead_source']}):")
        print(table(result))
        print(side_line(rows[-1]))
    wall = time.perf_counter() - t0
    summary = {"mode": "emulate" if args.emulate else "from", "points": len(rows),
               "wall_s": round(wall, 1), "load_before": [round(x, 2) for x in load],
               "load_after": [round(x, 2) for x in os.getloadavg()],
               "same_side": sum(r["same_side"] for r in rows)}
    document = {"summary": summary, "rows": rows, "calibrations": results}
    written = [out / "calibration.csv", out / "calibration.json"]
    written[0].write_text(to_csv(rows, CALIBRATION_COLUMNS))
    write_json(written[1], document)
    record_outputs(out, written)
    print(f"\n{len(rows)} point(s) in {wall:.0f} s of wall time (load {load[0]:.1f} before, "
          f"{summary['load_after'][0]:.1f} after); emulation and simulation on the same side "
          f"of the crossover at {summary['same_side']} of {len(rows)}")
    for r in rows:
        print(side_line(r))
    print(f"wrote {', '.join(str(w) for w in written)}")
    if args.json:
        write_json(args.json, document)
    return 0


def _refuse(args: argparse.Namespace, options: dict[str, str], why: str) -> None:
    for dest, flag in options.items():
        if getattr(args, dest, None) is not None:
            raise InputError(f"{flag}: {why}")


def _saved(path: Path) -> list[str]:
    """calibrate's argv for a saved head-to-head, checked now: it must parse and hold a run
    of an INA scheme and of a collective of the map."""
    from emulation.bench.calibrate import emulated, load_head_to_head

    try:
        _, rows = load_head_to_head(path)
        have = set(emulated(rows))
    except ValueError as exc:
        raise InputError(f"--from {exc}") from None
    _need_both(have, f"--from {path}: expected runs of ")
    return ["--from", str(path)]


def _need_both(have: set[str], what: str) -> None:
    try:
        readable(have, what)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _emulated(args: argparse.Namespace) -> list[list[str]]:
    """calibrate's argv per -t topology, every option checked before the first emulation."""
    from control_plane.model.topologies import build_topology
    from control_plane.model.topology import TopologyError
    from emulation.network.mininet_net import mininet_available

    quick = QUICK if args.quick else {}
    specs = args.topology or quick.get("topology") or [TOPOLOGY]
    schemes = args.scheme or quick.get("scheme") or list(SCHEMES)
    rounds = args.rounds or quick.get("rounds") or ROUNDS
    if rounds < 2:
        raise InputError(f"--rounds {rounds}: expected >= 2 (the first round holds the "
                         f"connections' set-up and is left out)")
    _need_both(set(schemes), "-s/--scheme: expected ")
    for spec in specs:
        try:
            build_topology(spec)
        except (TopologyError, ValueError, OSError) as exc:
            raise InputError(f"-t/--topology {spec}: {exc}") from None
    reason = mininet_available()
    if reason:
        raise InputError(f"--emulate: {reason}")
    points = []
    for spec in specs:
        scale = args.scale or SCALES.get(spec, SCALE)
        where = args.out / ("emulation-" + (re.sub(r"[^A-Za-z0-9]+", "", spec) or "topology"))
        points.append(["-t", spec, "-s", ",".join(schemes),
                       "--seeds", ",".join(str(s) for s in args.seeds),
                       "--rounds", str(rounds), "--eval-every", str(rounds),
                       "--scale", f"{scale:g}", "--out", str(where),
                       *(["-q"] if args.quiet else [])])
    return points

