"""`inart simulate`: the emulation's topologies, plans and schemes on a flow-level SimGrid model,
at real link speeds (Gbit/s) and on clusters of thousands of hosts.

Per scheme: communication time per iteration, iteration time (compute + communication),
sending rate per worker, bytes into the PSs and over the links.  INA schemes are paced to
their plan's rate (solved here, or --plan), so their simulated time checks the plan's own
(sim/plan).  The model and what it leaves out: docs/simulation.md.

Writes OUT/simulate.json (every result, with bytes per link) and OUT/simulate.csv (the
table), OUT being --out (default out/simulate; a run first removes the files the previous run
wrote there), and with --plot OUT/simulate.png; --json/--csv/--plot PATH write elsewhere.
Every input (topologies, plans, model, ranges) is checked before the first simulation.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from control_plane.cli.args import (
    InputError,
    RunFailed,
    add_json,
    add_out,
    add_plans,
    add_quiet,
    add_scheme,
    add_topology,
    deprecate,
    fresh_out,
    load_plan,
    positive,
    progress,
    record_outputs,
    write_json,
)
from control_plane.model.plan import Plan
from control_plane.model.topology import TopologyError
from control_plane.report import format_table, to_csv
from simulation.hardware import HOSTS, SWITCHES, PresetError, explain, parse, with_switches
from simulation.host_cost import DEFAULT_HOST_OVERHEAD_US, SOURCE
from simulation.profiles import ProfileError, load_profile
from simulation.routes import ROUTINGS
from simulation.run import SCHEMES, SimulationError, simulate, unit_bps
from simulation.size import SizeError, build_checked

COLUMNS = ("topology", "workers", "scheme", "comm_ms", "iter_ms", "rate_gbps", "plan_ms",
           "sim/plan", "ps_in_mb", "links_mb", "wall_s")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("simulate", help="simulate schemes on SimGrid at real link speeds",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_topology(p, many=True, legacy_spaces=True)
    add_scheme(p, SCHEMES, "all")
    deprecate(p, "--schemes", "--scheme")
    add_plans(p, "`inart plan` files (repeatable): each replaces the plan solved for its "
                 "scheme (one topology; each plan's scheme must be in -s)")
    p.add_argument("--link-gbps", type=positive(), metavar="GBPS",
                   help="the fastest link's Gbit/s (> 0); every capacity scales alike "
                        "(default: 1 Gbit/s per topology unit)")
    p.add_argument("--scale", type=positive(), metavar="MBPS",
                   help="Mbit/s per topology unit, as the emulation's --scale")
    p.add_argument("--latency-us", type=positive(), help="latency per link hop (default 1 us)")
    p.add_argument("--host-overhead-us", type=float, metavar="US",
                   help=f"collectives: the host's own time per message (default: the host "
                        f"preset's, else {DEFAULT_HOST_OVERHEAD_US:g}, gloo's as measured by "
                        f"`inart bench message-overhead`; 0: ideal hosts)")
    p.add_argument("--preset", metavar="SWITCH,HOST",
                   help=f"hardware: a switch preset ({', '.join(SWITCHES)}: each switch's "
                        f"aggregation capacity C(v)) and/or a host preset "
                        f"({', '.join(HOSTS)}), comma-separated (default: the topology's "
                        f"own C(v), gloo's host cost); docs/where-ina-wins.md")
    p.add_argument("--explain", action="store_true",
                   help="print every number of the presets with its source, and C(v) on each "
                        "topology, then stop")
    p.add_argument("--model", default="resnet50", metavar="MODEL",
                   help="the model whose gradients flow: resnet50 | vgg19 | lstm | gpt2-small | "
                        "synthetic:BYTES | PROFILE.json (default resnet50; checked first)")
    p.add_argument("--compute-ms", type=float, help="compute per iteration (overrides the model's)")
    p.add_argument("--iterations", type=positive(int), default=1, help="iterations (total time)")
    p.add_argument("--pace", type=positive(), default=1.0,
                   help="INA senders' rate as a multiple of the plan's")
    p.add_argument("--gradients-only", action="store_true",
                   help="INA: leave the PSs' result multicast out (what a plan's rate covers)")
    p.add_argument("--routing", choices=ROUTINGS, default="ecmp",
                   help="collectives' routes: ECMP, or dst (the emulation's, one BFS tree per "
                        "destination)")
    p.add_argument("--ps", type=int, help="number of PSs (fattree/leafspine)")
    p.add_argument("--seed", type=int, default=0,
                   help="PS choice (as `inart plan`), solver seed (INA plans), RSGCM search")
    p.add_argument("--force", action="store_true",
                   help="run a topology whose estimated memory exceeds what is available")
    add_json(p, "every result (with bytes per link; default OUT/simulate.json)")
    p.add_argument("--csv", type=Path, metavar="PATH",
                   help="write the table as CSV to PATH (default OUT/simulate.csv)")
    p.add_argument("--plot", type=Path, nargs="?", const=True, default=None, metavar="PNG",
                   help="plot communication time per scheme (several topologies: against "
                        "the number of workers) to OUT/simulate.png, or PNG")
    add_out(p, "simulate", "simulate.json, simulate.csv and simulate.png")
    add_quiet(p)
    p.set_defaults(func=run)


def row(r: dict[str, Any]) -> dict[str, Any]:
    """The printed columns of one result."""
    ratio = (r["comm_time_s"] / r["plan_comm_time_s"]) if r["plan_comm_time_s"] else None
    return {"topology": r["topology"], "workers": r["workers"], "scheme": r["scheme"],
            "comm_ms": round(r["comm_time_s"] * 1e3, 3),
            "iter_ms": round(r["iteration_time_s"] * 1e3, 3),
            "rate_gbps": round(r["rate_per_worker_bps"] / 1e9, 3),
            "plan_ms": round(r["plan_comm_time_s"] * 1e3, 3) if r["plan_comm_time_s"] else "-",
            "sim/plan": round(ratio, 4) if ratio else "-",
            "ps_in_mb": round(sum(r["ps_ingress_bytes"].values()) / 1e6, 1),
            "links_mb": round(sum(r["link_bytes"].values()) / 1e6, 1),
            "wall_s": round(r["wall_s"], 2)}


def check_plans(args: argparse.Namespace, topos: list[Any], schemes: list[str]) -> dict:
    """--plan files: readable plans, one per scheme, each scheme among -s, one topology
    (InputError naming the file and what was expected)."""
    plans: dict[str, Plan] = {}
    if not args.plan:
        return plans
    if len(topos) != 1:
        raise InputError("--plan: give exactly one --topology with it")
    for path in args.plan:
        plan = load_plan(path)
        if plan.scheme not in schemes:
            raise InputError(f"--plan {path}: a plan for {plan.scheme!r}, which -s "
                             f"{','.join(schemes)} does not run (add it to -s or drop the "
                             f"plan)")
        if plan.scheme in plans:
            raise InputError(f"--plan {path}: a second plan for {plan.scheme!r}")
        topo = topos[0]
        if sorted(plan.topology.workers) != sorted(topo.workers) or \
                sorted(plan.topology.pss) != sorted(topo.pss):
            raise InputError(f"--plan {path}: its workers and PSs differ from topology "
                             f"{topo.name}'s (expected a plan of -t {args.topology[0]})")
        plans[plan.scheme] = plan
    return plans


def run(args: argparse.Namespace) -> int:
    specs = args.topology or ["fig1"]
    schemes = args.scheme
    try:
        prof = load_profile(args.model, None if args.compute_ms is None
                            else args.compute_ms / 1e3)
    except ProfileError as exc:
        raise InputError(str(exc)) from exc
    try:
        topos = build_checked(specs, schemes, ps=args.ps, seed=args.seed, force=args.force,
                              quiet=args.quiet)
    except (TopologyError, SizeError) as exc:
        raise InputError(f"--topology {','.join(specs)}: {exc}") from exc
    try:
        switch, host = parse(args.preset) if args.preset else (None, None)
    except PresetError as exc:
        raise InputError(str(exc)) from exc
    host_us = args.host_overhead_us
    if host_us is None:
        host_us = host.message_us.value if host else DEFAULT_HOST_OVERHEAD_US
    units = [unit_bps(t, args.link_gbps, args.scale) for t in topos]
    if args.explain:
        show = host or (None if args.host_overhead_us is not None else HOSTS["gloo"])
        for line in explain(switch or SWITCHES["paper"], show):
            print(line)
        for topo, unit in zip(topos, units, strict=True):
            print(f"{topo.name}: {capacities(topo, switch, unit)}")
        return 0
    if switch is not None:
        topos = [with_switches(t, switch, u) for t, u in zip(topos, units, strict=True)]
    plans = check_plans(args, topos, schemes)
    results = []
    with progress(total=len(topos) * len(schemes), desc="simulate", unit="run",
                  quiet=args.quiet) as bar:
        for topo in topos:
            for scheme in schemes:
                bar.set_postfix(topology=topo.name, scheme=scheme)
                try:
                    res = simulate(topo, scheme, plan=plans.get(scheme),
                                   model_bytes=prof.model_bytes,
                                   compute_s=prof.compute_s, link_gbps=args.link_gbps,
                                   scale_mbps=args.scale, latency_us=args.latency_us,
                                   iterations=args.iterations, seed=args.seed, pace=args.pace,
                                   results=not args.gradients_only, routing=args.routing,
                                   host_overhead_us=host_us,
                                   sender_pps=host.ina_pps.value
                                   if host and host.ina_pps else None)
                except SimulationError as exc:
                    raise RunFailed(f"{scheme} on {topo.name}: {exc}") from exc
                results.append(res.to_dict())
                bar.update(1)
    print(f"model {prof.name}: {prof.model_bytes / 2**20:.1f} MiB, compute "
          f"{prof.compute_s * 1e3:g} ms per iteration; links {results[0]['link_gbps']:g} Gbit/s; "
          f"host overhead {host_us:g} us per collective message"
          f"{f' ({SOURCE})' if host_us == DEFAULT_HOST_OVERHEAD_US else ''}"
          f"{f'; presets {args.preset}' if args.preset else ''}")
    print(format_table([row(r) for r in results], list(COLUMNS)))
    for r in results:
        if r["note"]:
            print(f"{r['scheme']} on {r['topology']}: {r['note']}")
    setup = {"topologies": specs, "schemes": schemes, "model": prof.name,
             "model_bytes": prof.model_bytes, "compute_s": prof.compute_s,
             "link_gbps": args.link_gbps, "scale_mbps": args.scale,
             "latency_us": args.latency_us, "seed": args.seed, "pace": args.pace,
             "routing": args.routing, "gradients_only": args.gradients_only,
             "host_overhead_us": host_us, "preset": args.preset,
             "plans": [str(p) for p in args.plan]}
    out = fresh_out(args.out)
    written = [out / "simulate.json", out / "simulate.csv"]
    write_json(written[0], {"setup": setup, "results": results})
    written[1].write_text(to_csv([row(r) for r in results]))
    if args.plot:
        written.append(out / "simulate.png" if args.plot is True else args.plot)
        plot(results, written[-1])
    record_outputs(out, written)
    print(f"wrote {', '.join(str(w) for w in written)}")
    if args.json:
        write_json(args.json, {"setup": setup, "results": results})
    if args.csv:
        args.csv.write_text(to_csv([row(r) for r in results]))
    return 0


def capacities(topo: Any, switch: Any, unit: float) -> str:
    """C(v) of the switches of ``topo`` (with ``switch`` applied), in Gbit/s: their range."""
    if switch is not None:
        topo = with_switches(topo, switch, unit)
    caps = sorted({n.capacity * unit / 1e9 for n in topo.nodes.values()
                   if n.kind == "switch" and n.capacity is not None})
    if not caps:
        return "no switch capacities"
    span = f"{caps[0]:.6g}" if len(caps) == 1 else f"{caps[0]:.6g}-{caps[-1]:.6g}"
    fastest = max(link.capacity for link in topo.links.values()) * unit / 1e9
    return f"C(v) = {span} Gbit/s, links up to {fastest:g} Gbit/s"


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Bars per scheme (one topology) or comm time against workers per scheme (several)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    topologies = list(dict.fromkeys(r["topology"] for r in results))
    schemes = list(dict.fromkeys(r["scheme"] for r in results))
    if len(topologies) == 1:
        ax.bar(schemes, [r["comm_time_s"] * 1e3 for r in results])
        ax.set_title(f"{topologies[0]}, {results[0]['link_gbps']:g} Gbit/s links")
        ax.set_xlabel("scheme")
    else:
        for s in schemes:
            pts = sorted((r["workers"], r["comm_time_s"] * 1e3) for r in results
                         if r["scheme"] == s)
            ax.plot(*zip(*pts, strict=True), marker="o", label=s)
        ax.set_xscale("log")
        ax.set_xlabel("workers")
        ax.legend(fontsize=8)
    ax.set_ylabel("communication ms per iteration")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
