"""`inart experiment multi-job`: several training jobs at once on one emulated network,
planned together.

One Mininet network of P4 switches; a controller service (the one `inart serve` runs, here in
this process on a Unix socket the hosts reach) registers it; every job is submitted before any
traffic starts, so the service plans them together (control_plane/solver/multi_job.py: each on its
share of the switches and links they contend for) and installs each in its own lane (its own
wire job id, slot pool, multicast groups: control_plane/deploy/versions.py).  Then every job's
PSs and workers run at the same time (host_stack/train/hostrun.py, following the service's
versions), every round's sums checked against numpy, and the table shows per job its measured
sending rate against its plan's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import threading
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from control_plane.cli.args import add_topology
from control_plane.deploy.addressing import assign
from control_plane.deploy.pipeline import pipeline_for
from control_plane.drivers.p4runtime import P4Info
from control_plane.model.plan import Plan
from control_plane.model.topologies import build_topology, command_seed
from control_plane.model.topology import Topology
from control_plane.service.client import Client
from control_plane.service.controller import Controller
from control_plane.service.server import build_server
from control_plane.service.store import Store
from control_plane.service.switches import P4RuntimeInstaller
from control_plane.solver.multi_job import check_fits
from control_plane.solver.solve import SCHEMES as INA_SCHEMES
from emulation.cli.emulate import add_emulation_args, traffic_config
from emulation.measure.metrics import summarize, write_rows
from emulation.network.link_impair import LinkImpairment
from emulation.network.link_impair import from_args as impairment
from emulation.network.mininet_net import Network, queue_for
from host_stack.cli.experiment import add_common_args
from host_stack.train.hostrun import JobResult, TrafficConfig, TrafficError, run_hosts, service_job


class JobsError(ValueError):
    """A --jobs value that does not fit the topology; the message names the option."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_common_args(parser, "multi-job", 1, "gradient seeds, one repetition each",
                    "fig1 split in two jobs (halves), 2 short rounds", quiet=False)
    add_topology(parser)
    parser.add_argument("--ps", type=int, default=None, help="number of PSs (fat-tree, ...)")
    parser.add_argument("--preset", default=None, help="homogeneous | heterogeneous")
    parser.add_argument("--jobs", default="",
                        help="WORKERS:PSS per job, jobs separated by ';', e.g. "
                             "'w1,w2,w5:s1;w3,w4,w6:s2' (default: the workers and PSs split "
                             "in two halves)")
    parser.add_argument("-s", "--scheme", default="inart", choices=INA_SCHEMES, metavar="SCHEME",
                        help=f"every job's scheme: one of {', '.join(INA_SCHEMES)} "
                             f"(default inart)")
    # plans change under the workers; the network is a Network, not an Emulation
    add_emulation_args(parser, kernel_pacing=False, isolation=False)
    parser.set_defaults(func=run)


def parse_jobs(text: str, topo: Topology) -> list[tuple[list[str], list[str]]]:
    """``--jobs`` as (workers, PSs) per job; empty: two jobs, the halves of each."""
    if not text.strip():
        w, s = topo.workers, topo.pss
        if len(w) < 2 or len(s) < 2:
            raise JobsError(f"--jobs: {topo.name} has {len(w)} workers and {len(s)} PSs; "
                            f"two jobs need at least 2 of each (or give --jobs)")
        return [(w[:len(w) // 2], s[:len(s) // 2]), (w[len(w) // 2:], s[len(s) // 2:])]
    jobs, seen = [], set()
    for i, part in enumerate(text.split(";")):
        workers, sep, pss = part.partition(":")
        hosts = ([h.strip() for h in workers.split(",") if h.strip()],
                 [h.strip() for h in pss.split(",") if h.strip()])
        if not sep or not hosts[0] or not hosts[1]:
            raise JobsError(f"--jobs: job {i + 1} {part!r}: expected WORKERS:PSS, e.g. w1,w2:s1")
        for names, kind in zip(hosts, ("worker", "ps"), strict=True):
            for h in names:
                if h not in topo.nodes or topo.nodes[h].kind != kind:
                    raise JobsError(f"--jobs: job {i + 1}: {h!r} is not a {kind} of "
                                    f"{topo.name}")
                if h in seen:
                    raise JobsError(f"--jobs: job {i + 1}: {h!r} is in two jobs (a host "
                                    f"trains one job)")
                seen.add(h)
        jobs.append(hosts)
    return jobs


class ServedNetwork:
    """A Mininet network registered with a controller service in this process (Unix socket,
    so the hosts' namespaces reach it); everything stops when ``stack`` closes."""

    def __init__(self, stack: ExitStack, topo: Topology, out: Path, target: str,
                 scale: float, impair: LinkImpairment, quiet: bool,
                 fork_server: bool = True) -> None:
        addr = assign(topo)
        self.topo = topo
        self.sock = f"unix:{out / 'serve.sock'}"
        shutil.rmtree(out / "state", ignore_errors=True)  # a fresh service, no old jobs
        queue = queue_for(len(topo.workers), len(topo.pss), TrafficConfig.window)
        self.net = stack.enter_context(Network(topo, addr, out / "logs", target, scale, impair,
                                               quiet, queue, fork_server=fork_server))
        self.net.prepare_versions()
        pipeline = pipeline_for(target)
        installer = P4RuntimeInstaller(pipeline)
        controller = Controller(Store(out / "state"), installer, P4Info.load(pipeline.p4info),
                                reconcile_interval=3600.0)
        controller.start()
        stack.callback(controller.stop)
        server, _ = build_server(controller, self.sock)
        stack.callback(lambda: server.stop(0).wait())
        self.client = stack.enter_context(Client(self.sock, timeout=120))
        self.client.register_topology(topo, {sw: (addr.grpc_address(sw), addr.device_id[sw])
                                             for sw in topo.switches})


def run_jobs(served: ServedNetwork, jobs: list[tuple[list[str], list[str]]], scheme: str,
             cfg: TrafficConfig, out: Path, quiet: bool) -> list[dict]:
    """Submit every job, then run them all at once; one row per job."""
    submitted = [served.client.submit(w, s, model_size=cfg.values, scheme=scheme,
                                      name=f"job{i + 1}") for i, (w, s) in enumerate(jobs)]
    versions = [served.client.plan(j.id) for j in submitted]  # after all were planned
    plans = [Plan.from_dict(json.loads(v.plan_json)) for v in versions]
    over = check_fits({str(v.job_id): p for v, p in zip(versions, plans, strict=True)},
                      served.topo)
    if over:
        raise RuntimeError(f"the service's plans overload the network: {over[:3]}")
    results: dict[int, JobResult | BaseException] = {}

    def one(v) -> None:
        try:
            results[v.job_id] = run_hosts(
                served.net, service_job(served.sock, v.job_id, list(v.workers), list(v.pss),
                                        dict(v.ranks)),
                cfg, out / "hosts" / f"job{v.job_id}", quiet)
        except BaseException as exc:  # reported below, after every job ended
            results[v.job_id] = exc
    threads = [threading.Thread(target=one, args=(v,), name=f"job{v.job_id}")
               for v in versions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [f"job {k}: {e}" for k, e in results.items() if isinstance(e, BaseException)]
    if failed:
        raise TrafficError("; ".join(failed))
    rows = []
    for v, plan in zip(versions, plans, strict=True):
        job = results[v.job_id]
        assert isinstance(job, JobResult)
        used = {r["version"] for recs in job.rounds.values() for r in recs}
        row = summarize(plan, job, cfg, 0, 0, {})
        meta = plan.meta.get("multi_job", {})
        rows.append({"job": v.job_id, "workers": ",".join(v.workers), "pss": ",".join(v.pss),
                     "wire_job": v.wire_job, "version": v.version,
                     "versions_used": sorted(used), "alone_units": meta.get("alone", plan.rate),
                     "plan_units": plan.rate, "plan_mbps": row["plan_rate_mbps"],
                     "rate_mbps": row["rate_mbps"], "rate_ratio": row["rate_ratio"],
                     "comm_s": row["comm_s"], "plan_comm_s": row["plan_comm_s"],
                     "retx": row["retx"], "exact": job.exact,
                     "mismatches": job.mismatches[:5]})
    return rows


def table(rows: list[dict]) -> str:
    head = (f"{'job':>3} {'workers':>14} {'pss':>6} {'wire':>4} {'alone':>7} {'plan':>7} "
            f"{'plan Mb/s':>9} {'Mb/s':>7} {'ratio':>5} {'comm s':>7} {'retx':>5} exact")
    lines = [head]
    for r in rows:
        lines.append(f"{r['job']:>3} {r['workers']:>14} {r['pss']:>6} {r['wire_job']:>4} "
                     f"{r['alone_units']:7.3f} {r['plan_units']:7.3f} {r['plan_mbps']:9.3f} "
                     f"{r['rate_mbps']:7.3f} {r['rate_ratio']:5.2f} {r['comm_s']:7.2f} "
                     f"{r['retx']:5d} {r['exact']!s}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.quick:
        args.topology, args.rounds, args.values, args.jobs = "fig1", 2, 32 * 400, ""
    if args.rounds < 1 or args.scale <= 0:
        print("inart experiment multi-job: error: --rounds must be >= 1 and --scale > 0",
              file=sys.stderr)
        return 2
    try:
        topo = build_topology(args.topology, ps=args.ps, preset=args.preset,
                              seed=command_seed(args.seed))
        jobs = parse_jobs(args.jobs, topo)
    except ValueError as exc:
        print(f"inart experiment multi-job: error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    try:
        for seed in args.seeds:
            with ExitStack() as stack:
                served = ServedNetwork(stack, topo, out / f"seed{seed}", args.target,
                                       args.scale, impairment(args), args.quiet,
                                       args.fork_server)
                cfg = replace(traffic_config(args, args.scale * 1e6), seed=seed)
                rows += [dict(r, seed=seed) for r in
                         run_jobs(served, jobs, args.scheme, cfg, out / f"seed{seed}",
                                  args.quiet)]
    except KeyboardInterrupt:
        print("inart experiment multi-job: interrupted; network torn down", file=sys.stderr)
        return 130
    except (RuntimeError, ValueError) as exc:
        print(f"inart experiment multi-job: error: {exc}", file=sys.stderr)
        return 1
    print(table(rows))
    jpath, cpath = write_rows(rows, out, "multi-job")
    print(f"wrote {jpath} and {cpath}")
    if any(r["exact"] is False for r in rows):
        print("inart experiment multi-job: WRONG AGGREGATES", file=sys.stderr)
        return 1
    return 0
