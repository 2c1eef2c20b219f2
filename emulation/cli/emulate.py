"""`inart emulate`: one topology on Mininet, each scheme's plan installed and measured.

    inart emulate --topology fig1 --scheme inart,atp,lbmm [--target embedded|bmv2]
                  [--scale MBPS_PER_UNIT] [--rounds R] [--pacing kernel|user]
                  [--loss PCT] [--dup PCT] [--reorder PCT] [--impair-links A-B,...]
                  [--find-max-rate]
                  [--find-max-scale SCALES] [--cli | --keep-up]
                  [--metrics HOST:PORT] [--web HOST:PORT]

Prints a table per scheme (measured vs plan), who paced the INA senders (``--pacing``: the
kernel by default, emulation/network/host_pacing.py), a fidelity verdict per scheme (sent / plan,
retransmissions, the machine's CPU during its run: emulation/measure/fidelity.py), the
communication-time ratios beside the paper's (only when no scheme was marked: otherwise why
the result is the machine's), each run's wall time, peak memory (PSS of switches and hosts)
and CPU, the whole emulation's, and writes emulate.json / emulate.csv (and max-rate.csv)
under --out.
``--find-max-scale 0.01,0.02,...`` builds the network at each scale in turn (the plan's traffic
times the scale) until a scheme falls below 0.95 of its planned rate, then prints the largest
scale reached and what limits it (emulation/runs/scale_search.py).
``--cli`` keeps the network up after the runs, with the last scheme's plan installed, in
Mininet's CLI (``pingall``, ``w1 ping s1``, ``sh inart shell v1``; ``exit`` tears it down);
``--keep-up`` keeps it up until Ctrl-C.  `inart shell SWITCH` attaches meanwhile.
``--metrics`` serves every switch's, PS's and worker's Prometheus metrics on one address and
``--web`` the live web view (docs/observability.md); either writes OUT/metrics.jsonl.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from control_plane.cli.args import (
    InputError,
    add_metrics,
    add_out,
    add_quiet,
    add_scheme,
    add_topology,
    command,
    fresh_out,
    positive,
    record_outputs,
)
from control_plane.model.topologies import build_topology, command_seed
from control_plane.model.topology import TopologyError
from control_plane.observe.exporter import MetricsError
from control_plane.observe.exporter import check_address as check_metrics_address
from control_plane.observe.web import WebError
from control_plane.observe.web import check_address as check_web_address
from control_plane.solver.solve import SCHEMES, plan_for
from emulation.cluster.spec import CLUSTER_HELP
from emulation.cluster.spec import argument as cluster_argument
from emulation.measure.fidelity import ranking_lines
from emulation.measure.metrics import table, write_rows
from emulation.network.cpu_isolation import switch_weight
from emulation.network.link_impair import add_arguments as add_impair_arguments
from emulation.network.link_impair import from_args as impairment
from emulation.runs.emulate import Emulation
from emulation.runs.scale_search import ScaleResult, parse_scales, search, summary
from host_stack.ddp.hostscript import ScriptJob
from host_stack.ddp.script_args import add_script_args, script_job, script_lines
from host_stack.ina.transport import PACING_MODES
from host_stack.train.hostrun import MODES, TrafficConfig
from host_stack.train.jobargs import MODEL_NAMES

# InArt (WWW '24, section 5.3.2, 50 workers, heterogeneous fat-tree): communication time
# cut by 49% vs ATP and 81% vs LBMM, i.e. inart/atp = 0.51 and inart/lbmm = 0.19.  Only a
# fat-tree run is the paper's setting; every run is compared with its own plans.
PAPER_COMM_RATIO = {"atp": 0.51, "lbmm": 0.19}
PAPER_TOPOLOGY = "fattree"
DEFAULT_FACTORS = "1.0,1.05,1.1,1.2,1.35,1.5,2.0,3.0"  # plans are tight: fine steps near 1


def add_emulation_args(p: argparse.ArgumentParser, kernel_pacing: bool = True,
                       isolation: bool = True, model: bool = True) -> None:
    """Options shared by `inart emulate` and the emulation experiments (``kernel_pacing``:
    whether its runs set up the hosts' pacing classes, Emulation.run, and take --pacing;
    ``isolation``: whether they build an Emulation, which takes --switch-cpu-weight;
    ``model``: whether --model is the trained model, or the command's own)."""
    p.add_argument("--target", choices=("embedded", "bmv2"), default="embedded",
                   help="switch target (bmv2 needs /opt/p4/bin/simple_switch_grpc)")
    p.add_argument("--scale", type=positive(), default=0.25, metavar="MBPS",
                   help="Mbit/s per topology capacity unit for links and pacing (default 0.25: "
                        "what the Python embedded target carries on 2 cores)")
    p.add_argument("--rounds", type=positive(int), default=3, help="iterations per scheme")
    add_pace_arg(p)
    if kernel_pacing:
        add_pacing_arg(p)
    add_impair_arguments(p)
    p.add_argument("--values", type=int, default=32 * 1500,
                   help="gradient length (int32 values) in synthetic mode; rounds much longer "
                        "than one round trip measure the paced rate")
    p.add_argument("--mode", choices=MODES, default="synthetic",
                   help="synthetic gradients with checked sums, or real training")
    if model:
        p.add_argument("--model", default="mlp", choices=MODEL_NAMES,
                       help="the model whose gradients flow with --mode train (default mlp)")
    else:
        p.set_defaults(model="mlp")
    p.add_argument("--seed", type=int, default=0, help="solver and gradient seed")
    p.add_argument("--deadline", type=float, default=600.0, help="seconds per scheme run")
    add_quiet(p)
    p.add_argument("--cluster", metavar="SERVERS_YAML", type=cluster_argument, default=None,
                   help=CLUSTER_HELP)
    if isolation:
        add_isolation_arg(p)
    p.add_argument("--no-fork-server", dest="fork_server", action="store_false",
                   help="start every training worker as its own interpreter (mnexec) instead "
                        "of forking it from one that imported torch once (shared pages)")


def pace_factor(text: str) -> float:
    """--pace: a factor in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a factor 0 < FACTOR <= 1")
    return value


def add_pace_arg(p: argparse.ArgumentParser) -> None:
    """--pace, for every command that paces INA senders to a plan."""
    p.add_argument("--pace", type=pace_factor, default=1.0, metavar="FACTOR",
                   help="pace every sender at FACTOR x its plan's rate (default 1): headroom "
                        "where a plan loads a link to 100%%, whose queue paced senders never "
                        "drain; rates are still reported against the plan (plan_ratio)")


def add_pacing_arg(p: argparse.ArgumentParser) -> None:
    """--pacing, for commands whose INA runs go through Emulation.run."""
    p.add_argument("--pacing", choices=PACING_MODES, default="kernel",
                   help="who paces INA senders: kernel (default: an htb class per stream on "
                        "each worker's egress, emulation/network/host_pacing.py) or user (a token "
                        "bucket in the worker, which falls behind on a busy machine)")


def add_isolation_arg(p: argparse.ArgumentParser) -> None:
    """--switch-cpu-weight, for every command that builds an emulation on this machine."""
    p.add_argument("--switch-cpu-weight", type=switch_weight, default=None, metavar="W",
                   help="put the switch processes and the host processes (PSs, workers) in "
                        "two cgroups weighted W : 100 for the CPU (1..10000; default: no "
                        "isolation); where cgroups offer no CPU weight it says why and runs "
                        "without (emulation/network/cpu_isolation.py)")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = command(subparsers, "emulate", "run schemes on a Mininet emulation", __doc__)
    add_topology(p)
    p.add_argument("--ps", type=int, default=None, help="number of PSs (fat-tree, leaf-spine)")
    p.add_argument("--workers", type=int, default=None, help="number of workers")
    p.add_argument("--preset", default=None, help="homogeneous | heterogeneous")
    add_scheme(p, SCHEMES, "inart")
    p.add_argument("--find-max-rate", action="store_true",
                   help="raise the paced rate until rounds need retransmissions or the "
                        "measured rate falls 4%% behind the paced one")
    p.add_argument("--factors", default=DEFAULT_FACTORS, help="rate factors for --find-max-rate")
    p.add_argument("--find-max-scale", metavar="SCALES", default=None,
                   help="increasing scales (e.g. 0.01,0.02,0.05,0.1): run every scheme at each "
                        "until one sends < 0.95 of its plan; print the largest scale reached "
                        "and what limits it (replaces --scale)")
    add_out(p, "emulate", "emulate.json, emulate.csv, max-rate.csv and the runs' logs")
    explore = p.add_mutually_exclusive_group()
    explore.add_argument("--cli", action="store_true",
                         help="after the runs, keep the network up in Mininet's CLI (the last "
                              "scheme's plan installed); exit or Ctrl-D tears it down")
    explore.add_argument("--keep-up", action="store_true",
                         help="after the runs, keep the network up until Ctrl-C (or SIGTERM); "
                              "`inart shell SWITCH` attaches meanwhile")
    add_metrics(p)
    p.add_argument("--web", metavar="HOST:PORT", default=None,
                   help="serve the live web view there (loopback; port 0: any free one, "
                        "printed); with it or --metrics, every process's metrics go to "
                        "OUT/metrics.jsonl each second")
    add_emulation_args(p)
    add_script_args(p, "host, with --mode train")
    p.set_defaults(func=run)


def traffic_config(args: argparse.Namespace, unit_bps: float) -> TrafficConfig:
    return TrafficConfig(mode=args.mode, rounds=args.rounds, values=args.values,
                         model=args.model, unit_bps=unit_bps, seed=args.seed,
                         deadline_s=args.deadline, rate_factor=args.pace,
                         pacing=getattr(args, "pacing", "user"))


def comm_ratios(rows: list[dict]) -> list[str]:
    """inart's communication time relative to each baseline, beside its plans' ratio, and
    beside the paper's where the run is on the paper's kind of topology (a fat-tree)."""
    by = {r["scheme"]: r for r in rows}
    out = []
    if "inart" not in by:
        return out
    paper_setting = str(by["inart"].get("topology", "")).startswith(PAPER_TOPOLOGY)
    for base, paper in PAPER_COMM_RATIO.items():
        if base in by and by[base]["comm_s"] > 0:
            ratio = by["inart"]["comm_s"] / by[base]["comm_s"]
            line = f"comm time inart/{base} = {ratio:.2f} (cut {1 - ratio:.0%})"
            if by[base].get("plan_comm_s"):
                line += f"; plans: {by['inart']['plan_comm_s'] / by[base]['plan_comm_s']:.2f}"
            if paper_setting:
                line += f"; paper (its fat-tree): {paper:.2f} (cut {1 - paper:.0%})"
            out.append(line)
    return out


def pace_lines(rows: list[dict]) -> list[str]:
    """Where senders were paced under their plan: what that gave against the plan itself."""
    return [f"{r['scheme']}: paced at {r['rate_factor']:g} x plan, sent {r['rate_mbps']:.4g} "
            f"Mbit/s = {r['plan_ratio']:.3f} of the plan's "
            f"{r['plan_rate_units'] * r['scale_mbps_per_unit']:.4g}"
            for r in rows if r.get("rate_factor", 1.0) != 1.0]


def pacing_lines(rows: list[dict]) -> list[str]:
    """Who paced each scheme's INA senders, and for the kernel what tc counted in its
    classes (the share of the bytes the workers sent)."""
    out = []
    for r in rows:
        if r.get("pacing") == "kernel":
            out.append(f"pacing {r['scheme']}: kernel (htb class per stream on every worker's "
                       f"egress; tc counted {r['kernel_paced_share']:.2f} of the workers' bytes "
                       f"there, {r['kernel_paced_drops']} dropped)")
        elif r.get("pacing") == "user":
            why = (f"; kernel pacing unavailable: {r['pacing_fallback']}"
                   if r.get("pacing_fallback") else "")
            out.append(f"pacing {r['scheme']}: user (token bucket in the worker{why})")
        elif r.get("pacing"):
            out.append(f"pacing {r['scheme']}: {r['pacing']}")
    return out


def resource_lines(rows: list[dict]) -> list[str]:
    """Each run's wall time, peak PSS (switches + hosts) and CPU, one line per scheme."""
    return [f"{r['scheme']}: wall {r['wall_s']:.1f} s, peak PSS {r['peak_pss_mb']:.0f} MB "
            f"(switches {r['switch_pss_mb']:.0f}, hosts {r['host_pss_mb']:.0f}; RSS sum "
            f"{r['peak_rss_mb']:.0f} MB), CPU "
            f"switches {r['switch_cores']:.2f} + hosts {r['host_cores']:.2f} cores, machine "
            f"{r['machine_busy']:.0%} busy" for r in rows if "wall_s" in r]


def impairment_lines(rows: list[dict]) -> list[str]:
    """What the impaired links did to each run's frames (none when no link is impaired)."""
    return [f"{r['scheme']}: links impaired ({r['impairment']}): {r['frames_dropped']} frames "
            f"dropped, {r['frames_held']} held back, {r['frames_duplicated']} duplicated"
            for r in rows if r.get("impairment", "none") != "none"]


def emulate_at(args: argparse.Namespace, topo, plans, scale: float, out: Path,
               script: ScriptJob | None = None) -> tuple[ScaleResult, list[dict]]:
    """Every plan on one network at ``scale``: the rows, and the --find-max-rate sweep."""
    rows, sweep, verdicts = [], [], []
    t0 = time.monotonic()
    with Emulation(topo, out, args.target, scale, impairment(args), args.quiet,
                   fork_server=args.fork_server, cluster=args.cluster,
                   switch_cpu_weight=args.switch_cpu_weight, metrics=args.metrics,
                   web=args.web) as emu:
        for what, server in (("metrics", emu.exporter), ("web view", emu.web)):
            if server is not None:
                print(f"emulation: {what} on {server.url}", flush=True)
        cfg = traffic_config(args, emu.unit_bps)
        for plan in plans:
            compiled = emu.install(plan)
            if script is not None:
                rows.append(dict(emu.run_script(plan, compiled, script, cfg, plan.scheme),
                                 topology=topo.name, target=args.target))
                for line in script_lines(rows[-1]):
                    print(line, flush=True)
                continue
            run_ = emu.run(plan, compiled, cfg, plan.scheme)
            rows.append(dict(run_.row, topology=topo.name, target=args.target))
            verdicts.append(run_.verdict)
            if args.find_max_rate:
                factors = [float(f) for f in args.factors.split(",")]
                sweep += emu.find_max_rate(plan, compiled, cfg, factors)
        if script is None:  # a script's rows are its own (script_lines)
            print(table(rows))
            lines = (pace_lines(rows) + pacing_lines(rows) + impairment_lines(rows)
                     + [v.line() for v in verdicts])
            for line in lines + ranking_lines(verdicts, comm_ratios(rows)) + resource_lines(rows):
                print(line)
        if args.cli or args.keep_up:
            emu.explore(cli=args.cli)
        peak = emu.monitor.all_peak_mb
        split = emu.monitor.all_peak_split
        rss = emu.monitor.all_peak_rss_mb
    wall = time.monotonic() - t0
    print(f"whole emulation at scale {scale:g}: wall {wall:.0f} s (network up to torn down), "
          f"peak PSS {peak:.0f} MB (switches {split.get('switches', 0):.0f}, hosts "
          f"{split.get('hosts', 0):.0f}; RSS sum {rss:.0f} MB)", flush=True)
    return ScaleResult(scale, rows, peak, wall), sweep


def check_observers(args: argparse.Namespace) -> None:
    """--metrics and --web: valid addresses, and a network on this machine."""
    try:
        if args.metrics is not None:
            check_metrics_address(args.metrics)
        if args.web is not None:
            check_web_address(args.web)
    except (MetricsError, WebError) as exc:
        prefix = "" if isinstance(exc, WebError) else "--metrics: "
        raise InputError(f"{prefix}{exc}") from exc
    if (args.metrics or args.web) and args.cluster:
        raise InputError("--metrics/--web: the processes' metrics are gathered on one "
                         "machine; expected no --cluster")


def run(args: argparse.Namespace) -> int:
    schemes = args.scheme
    try:
        topo = build_topology(args.topology, ps=args.ps, workers=args.workers,
                              preset=args.preset, seed=command_seed(args.seed))
    except TopologyError as exc:
        raise InputError(f"--topology {args.topology}: {exc}") from exc
    try:
        plans = [plan_for(topo, s, args.seed) for s in schemes]
        if args.find_max_scale:
            parse_scales(args.find_max_scale)
            if args.cli or args.keep_up:
                raise ValueError("--cli/--keep-up: not with --find-max-scale, which builds "
                                 "one network per scale")
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    script = script_job(args, args.deadline)
    if script is not None and (args.find_max_rate or args.find_max_scale):
        raise InputError("--script: not with --find-max-rate/--find-max-scale")
    check_observers(args)
    out = fresh_out(Path(args.out))
    rows, sweep = [], []
    try:
        if args.find_max_scale:
            def at(scale: float) -> ScaleResult:
                try:
                    return emulate_at(args, topo, plans, scale, out / f"scale-{scale:g}")[0]
                except RuntimeError as exc:  # e.g. a deadline passed: this scale failed
                    print(f"scale {scale:g}: {exc}", file=sys.stderr)
                    return ScaleResult(scale, [], float("nan"), float("nan"), error=str(exc))

            results = search(parse_scales(args.find_max_scale), at)
            rows = [dict(r, scale=res.scale) for res in results for r in res.rows]
            for line in summary(results):
                print(line)
        else:
            result, sweep = emulate_at(args, topo, plans, args.scale, out, script)
            rows = result.rows
    except KeyboardInterrupt:
        print("inart emulate: interrupted; network torn down", file=sys.stderr)
        return 130
    except (RuntimeError, ValueError) as exc:
        print(f"inart emulate: error: {exc}", file=sys.stderr)
        return 1
    jpath, cpath = write_rows(rows, out, "emulate")
    record_outputs(out, [jpath, cpath, out / "max-rate.json", out / "max-rate.csv"])
    print(f"wrote {jpath} and {cpath}")
    if sweep:
        print(f"{'scheme':8s} {'factor':>6s} {'paced Mb/s':>10s} {'got Mb/s':>9s} "
              f"{'retx':>6s} holds")
        for r in sweep:
            print(f"{r['scheme']:8s} {r['factor']:6.2f} {r['paced_mbps']:10.3f} "
                  f"{r['rate_mbps']:9.3f} {r['retx_fraction']:6.1%} {r['holds']}")
        for scheme in schemes:
            held = [r for r in sweep if r["scheme"] == scheme and r["holds"]]
            plan_mbps = next(r["plan_rate_mbps"] for r in rows if r["scheme"] == scheme)
            ceiling = max((r["paced_mbps"] for r in held), default=0.0)
            print(f"{scheme}: empirical ceiling {ceiling:.3f} Mbit/s per worker vs plan "
                  f"f = {plan_mbps:.3f} Mbit/s (x{ceiling / plan_mbps:.2f})")
        write_rows(sweep, out, "max-rate")
    bad_rows = [r["scheme"] for r in rows if r.get("exact") is False]
    if bad_rows:
        print(f"inart emulate: WRONG AGGREGATES with {', '.join(bad_rows)}", file=sys.stderr)
        return 1
    return 0
