"""A parameter server process (one per PS host).

Run:  python -m host_stack.ina.ps --plan plan.json --ps s1 --addresses addr.json
(or ``--service ADDR --job-id N`` to follow a controller service's plan versions).  The packet
engine is ``ps_server.PsServer``.

Checkpoint: SIGUSR1 writes ``<checkpoint-dir>/<ps>-job<job>.npz`` (parameters, momentum,
last completed round per chunk) between two batches of packets; SIGTERM/SIGINT write the
counters to ``--stats`` and exit; ``--idle-exit`` ends a PS that has heard nothing for that
long.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from control_plane.observe.exporter import MetricsError
from control_plane.observe.exporter import start as start_metrics
from host_stack.ina import wire
from host_stack.ina.addresses import Address, parse_address
from host_stack.ina.aggregator import ChunkAggregator
from host_stack.ina.batchio import make_socket
from host_stack.ina.impair import ImpairedSocket, wrap
from host_stack.ina.metrics import ps_registry
from host_stack.ina.ps_apply import OptimizerApply, SumApply
from host_stack.ina.ps_server import PsServer, checkpoint
from host_stack.ina.result_group import send_on_loopback
from host_stack.ina.transport import TransportError
from host_stack.train.jobargs import load_job, process_parser, service_link


def build_parser() -> argparse.ArgumentParser:
    p = process_parser("host_stack.ina.ps", __doc__, "ps")
    p.add_argument("--bind", default=None, help="host:port to bind (default: its map entry)")
    p.add_argument("--mode", choices=("train", "sum", "allreduce"), default="train",
                   help="RESULT = updated parameters (train) or int32 sums (sum; allreduce: "
                        "sums of calls of any size up to the shard, one round per call, for "
                        "the torch backend and DDP hook)")
    p.add_argument("--result-to", action="append", default=None, metavar="HOST:PORT",
                   help="send each completed RESULT here once (e.g. a switch that multicasts "
                        "it) instead of one unicast copy per worker; repeatable")
    p.add_argument("--stats", default=None, help="write counters JSON here on exit")
    p.add_argument("--checkpoint-dir", default=None, help="where SIGUSR1 writes the shard")
    p.add_argument("--idle-exit", type=float, default=300.0,
                   help="exit after this many seconds without packets")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    bind: Address = ("?", 0)
    link = None
    try:
        link = service_link(args, args.ps)
        active = link.version() if link is not None else None
        job = load_job(args, impair_seed=args.seed * 1000 + 999, version=active)
        if args.ps not in job.plan.ps_ids:
            raise ValueError(f"--ps {args.ps}: not a PS of the plan ({', '.join(job.plan.ps_ids)})")
        if link is not None and (args.bind or args.result_to or args.result_group):
            raise ValueError("--service: each version brings the PS's address and result "
                             "address; drop --bind/--result-to/--result-group")
        bind = job.addresses[args.ps]
        if args.bind:
            bind = parse_address(args.bind, bind[1], args.ps)
        targets = None
        if args.result_to:
            if job.result_group:
                raise ValueError("--result-to and --result-group: give one place for RESULTs")
            targets = [parse_address(t, wire.RESULT_PORT, "--result-to") for t in args.result_to]
        elif job.result_group:
            targets = [job.result_group]
        first, end = job.ranges[args.ps]
        if args.mode == "train":
            params = job.initial_params(args)[first * job.n:end * job.n]
            apply = OptimizerApply(params, job.n, job.quantizer, args.lr, args.momentum)
        else:
            apply = SumApply()
        agg = ChunkAggregator(end - first, job.n, job.plan.workers, apply,
                              skip_rounds=args.mode == "allreduce")
        if link is not None:
            from host_stack.ina.ps_versions import VersionedPs  # imports grpc: only here

            server = VersionedPs(link, args.ps, active, job.n, job.n_values, agg,
                                 job.impairment, job.transport.gso)
        else:
            raw = make_socket(bind)
            if job.result_group:
                send_on_loopback(raw)
            sock = wrap(raw, job.impairment)
            server = PsServer(sock, job.plan.job, job.n, agg,
                              [job.addresses[w] for w in job.plan.worker_ids], targets,
                              job.transport.gso)
    except OSError as exc:
        print(f"ps: error: cannot bind {bind[0]}:{bind[1]}: {exc.strerror}", file=sys.stderr)
        return 2
    except (ValueError, TransportError) as exc:  # PlanError, AddressError, WireError, ...
        print(f"ps: error: {exc}", file=sys.stderr)
        if link is not None:
            link.close()
        return 2

    try:
        exporter = start_metrics(args.metrics, ps_registry(server.stats))
    except MetricsError as exc:
        print(f"ps: error: --metrics: {exc}", file=sys.stderr)
        return 2

    def on_signal(signum, _frame) -> None:
        if signum == signal.SIGUSR1:
            server.checkpoint_requested = True
        else:
            server.stop = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, on_signal)

    def on_idle() -> None:
        if server.checkpoint_requested:
            server.checkpoint_requested = False
            if args.checkpoint_dir:
                out = Path(args.checkpoint_dir) / f"{args.ps}-job{job.plan.job}.npz"
                checkpoint(out, args.ps, job.plan.job, agg, apply)
                server.counters["checkpoints"] += 1
            else:
                server.counters["checkpoint_no_dir"] += 1

    print(json.dumps({"event": "ready", "ps": args.ps, "bind": f"{bind[0]}:{bind[1]}",
                      "chunks": end - first, "range": [first, end],
                      "metrics": exporter.url if exporter else None}), flush=True)
    try:
        server.serve(args.idle_exit, on_idle)
    finally:
        if exporter is not None:
            exporter.close()
        stats = server.stats()
        if isinstance(server, PsServer):
            if isinstance(server.sock, ImpairedSocket):
                stats.update({f"impair_{k}": v for k, v in server.sock.counts.items()})
            server.sock.close()
        else:
            server.close()
        if args.stats:
            Path(args.stats).write_text(json.dumps(stats, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
