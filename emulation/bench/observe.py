"""`inart bench observe`: what the metrics and the web view cost an emulation, as the
change of its round time with them on against off, interleaved on one network in one run.

One Mininet network (embedded switches) serves metrics and the web view throughout; runs
alternate (with, without, without, with, ... so neither side always goes first):
- with: every PS and worker serves /metrics, the emulation scrapes every process each second
  into metrics.jsonl, a Prometheus-like client scrapes the emulation's /metrics each second
  and a web-view client reads the live stream (the page's server-sent events);
- without: no host metrics, no scraping, no web-view client (the switches' idle metrics
  servers stay: unscraped they cost nothing).
The figure: mean communication time per round with / without - 1 (goal <= 2%), with both
means, the pairs, the runs' own spread (standard deviation over mean of the runs without: a
cost below it cannot be told from the machine's noise) and this process's CPU seconds per
run (the gatherer's and the web view's work) beside it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from control_plane.cli.args import add_json, add_topology, positive, write_json
from control_plane.model.topologies import build_topology
from control_plane.observe.exporter import MetricsError, scrape_text
from control_plane.solver.solve import SCHEMES, plan_for
from emulation.runs.emulate import Emulation
from host_stack.train.hostrun import TrafficConfig

GOAL = 0.02  # at most 2% longer rounds with metrics and the web view on
SCRAPE_S = 1.0  # how often the stand-in Prometheus scrapes


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_topology(parser, default="fig1")
    parser.add_argument("-s", "--scheme", default="inart", choices=SCHEMES, metavar="SCHEME")
    parser.add_argument("--scale", type=positive(), default=0.25, metavar="MBPS",
                        help="Mbit/s per topology capacity unit")
    parser.add_argument("--rounds", type=positive(int), default=4, help="rounds per run")
    parser.add_argument("--values", type=positive(int), default=32 * 1500,
                        help="gradient values per worker and round")
    parser.add_argument("--pairs", type=positive(int), default=3,
                        help="runs with and without, each")
    add_json(parser, "the figure")
    parser.set_defaults(func=run)


@contextmanager
def observers(emu: Emulation) -> Iterator[None]:
    """A scraper of the emulation's /metrics and a reader of its web view's stream."""
    assert emu.exporter is not None and emu.web is not None
    stop = threading.Event()

    def scraper() -> None:
        while not stop.wait(SCRAPE_S):
            try:
                scrape_text(emu.exporter.url)
            except MetricsError:  # a scrape the loaded machine cut short: the next one
                continue

    def reader() -> None:
        with urllib.request.urlopen(emu.web.url + "api/events", timeout=30) as stream:
            while not stop.is_set() and stream.readline():
                pass
    threads = [threading.Thread(target=f, daemon=True) for f in (scraper, reader)]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=20)


def measure(args: argparse.Namespace, out: Path) -> dict:
    topo = build_topology(args.topology)
    plan = plan_for(topo, args.scheme, 0)
    comm: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    exact = True
    with Emulation(topo, out, scale=args.scale, quiet=True, metrics="127.0.0.1:0",
                   web="127.0.0.1:0") as emu:
        cfg = TrafficConfig(rounds=args.rounds, values=args.values, unit_bps=emu.unit_bps,
                            deadline_s=600)
        compiled = emu.install(plan)
        order = [on for i in range(args.pairs) for on in ((True, False) if i % 2 == 0
                                                          else (False, True))]
        for i, on in enumerate(order):
            emu.observe(on)
            t0 = time.process_time()
            if on:
                with observers(emu):
                    row = emu.run(plan, compiled, cfg, f"with-{i}").row
            else:
                row = emu.run(plan, compiled, cfg, f"without-{i}").row
            cpu[on].append(time.process_time() - t0)
            comm[on].append(row["comm_s"])
            exact = exact and row["exact"] is True
        emu.observe(True)
    with_s, without_s = statistics.mean(comm[True]), statistics.mean(comm[False])
    cost = with_s / without_s - 1
    return {"name": f"observe.round_time_cost[{args.topology}]", "value": round(cost, 4),
            "unit": "fraction", "ratio": round(with_s / without_s, 4), "goal": f"<= {GOAL:g}",
            "met": cost <= GOAL, "with_comm_s": round(with_s, 4),
            "without_comm_s": round(without_s, 4), "pairs": args.pairs,
            # the runs' own spread: a cost below it cannot be told from the machine's noise
            "noise": round(statistics.stdev(comm[False]) / without_s, 4)
            if len(comm[False]) > 1 else None,
            "with_cpu_s": round(statistics.mean(cpu[True]), 3),
            "without_cpu_s": round(statistics.mean(cpu[False]), 3), "exact": exact,
            "runs": {"with": comm[True], "without": comm[False]}}


def line(f: dict) -> str:
    noise = "-" if f["noise"] is None else f"{f['noise']:.3f}"
    return (f"{f['name']:<34} {f['value']:+.4f} {f['unit']}  ratio {f['ratio']:.4f}x  goal "
            f"{f['goal']}: {'met' if f['met'] else 'NOT met'}  (round comm {f['with_comm_s']} "
            f"s with, {f['without_comm_s']} s without, {f['pairs']} pairs interleaved; "
            f"run-to-run noise {noise}; this process's CPU {f['with_cpu_s']} s vs "
            f"{f['without_cpu_s']} s a run; exact {f['exact']})")


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="inart-bench-observe-") as tmp:
        figure = measure(args, Path(tmp))
    print(line(figure), flush=True)
    if args.json is not None:
        write_json(args.json, [figure])
    return 0 if figure["exact"] else 1
