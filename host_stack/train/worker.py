"""A training worker process: local gradients in, parameters from the sync scheme out.

Run one per worker host:
    python -m host_stack.train.worker --plan plan.json --worker w1 --addresses addr.json \
        --rounds 100

It trains on its interleaved shard of the digits data (``--model mlp|cnn``) or sends random
gradients (``--model synthetic``, for throughput; with ``--sync ina`` that process never
imports torch: ~30 MB instead of ~260 MB, so an emulation can run 50 of them), and prints
one JSON object per line on stdout: ``{"event": "round", ...}`` per round and
``{"event": "done", ...}`` at the end (with test accuracy and a digest of the final
parameters, which must be equal on every worker).
Errors go to stderr as one line, with exit status 3 (transport) or 2 (bad input).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import zlib
from dataclasses import asdict
from pathlib import Path

import numpy as np

from control_plane.observe.exporter import MetricsError
from control_plane.observe.exporter import start as start_metrics
from host_stack.ina.metrics import WorkerMetrics
from host_stack.ina.transport import TransportError
from host_stack.train.jobargs import add_round_args, load_job, process_parser, service_link
from host_stack.train.sync import MeasuredSync, RoundStats
from host_stack.train.sync_registry import SYNCS, WorkerContext, load_sync


def worker_seed(seed: int, rank: int) -> int:
    """Data-order seed of one worker (the single-process reference replays the same)."""
    return seed + 1000 * rank


def expected_digests(workers: int, rounds: int, values: int, seed: int = 0,
                     ranks: list[int] | None = None) -> list[str]:
    """sha256 of every round's int32 sums in synthetic mode, as the workers report them, so a
    caller can check every aggregate without trusting the network."""
    from host_stack.ina.quantize import Quantizer

    q = Quantizer(workers)
    rngs = [np.random.default_rng(worker_seed(seed, r))
            for r in (range(workers) if ranks is None else ranks)]
    out = []
    for _ in range(rounds):
        total = np.zeros(values, np.int64)
        for rng in rngs:
            total += q.quantize(rng.standard_normal(values, dtype=np.float32))[0]
        out.append(hashlib.sha256(total.astype(np.int32).tobytes()).hexdigest())
    return out


def build_parser() -> argparse.ArgumentParser:
    p = process_parser("host_stack.train.worker", __doc__, "worker")
    p.add_argument("--sync", default="ina", choices=sorted(SYNCS), help="synchronisation scheme")
    add_round_args(p)
    p.add_argument("--start-file", default=None,
                   help="after the HELLO, print a 'ready' event and start round 0 only once this "
                        "file exists (a launcher's start barrier)")
    p.add_argument("--start-timeout", type=float, default=600.0,
                   help="seconds to wait for --start-file")
    p.add_argument("--eval-every", type=int, default=0, metavar="K",
                   help="test accuracy in the round record every K rounds (time-to-accuracy; "
                        "its time is in neither compute_s nor sync_s)")
    return p


def wait_for_start(path: Path, timeout_s: float) -> None:
    """Block until ``path`` exists: every worker of a job starts round 0 together.

    Without it, round 0 spans the launch of every worker process (tens of seconds for 50
    Python workers on 2 cores), and the first ones spend it resending probes to PSs that are
    only waiting for the last worker: tens of thousands of resends that load the switches.
    """
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise TransportError(f"start file {path} did not appear within {timeout_s:.0f} s")
        time.sleep(0.02)


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def _round_fields(sync: MeasuredSync, rs: RoundStats) -> dict:
    """One round's JSON line: the loop's timing plus what the scheme sent (its CommStats)."""
    comm = asdict(sync.history[-1])
    del comm["round"]
    comm.pop("counters", None)
    return {"round": rs.round, "loss": rs.loss, "compute_s": rs.compute_s,
            "sync_s": rs.sync_s, "sync_at": rs.sync_at, **comm}


def run(args: argparse.Namespace) -> int:
    if args.rounds < 1 or args.batch < 1 or args.eval_every < 0:
        raise ValueError("--rounds and --batch: expected >= 1, --eval-every >= 0")
    link = service_link(args, args.worker)
    if link is not None and args.sync != "ina":
        raise ValueError(f"--service: only --sync ina follows the service's plan versions, "
                         f"not --sync {args.sync}")
    job = load_job(args, impair_seed=args.seed * 1000 + zlib.crc32(args.worker.encode()),
                   version=link.for_round(0) if link is not None else None)
    rank = job.plan.rank(args.worker)
    sync = load_sync(args.sync).build(WorkerContext(job, args, args.worker, rank, link))
    metrics = WorkerMetrics(lambda: getattr(getattr(sync, "transport", None), "counters", {}))
    exporter = start_metrics(args.metrics, metrics.registry)
    if exporter is not None:  # stdout carries the JSON events only
        print(f"worker {args.worker}: metrics on {exporter.url}", file=sys.stderr, flush=True)

    def round_done(fields: dict, **extra) -> None:
        """Its JSON line, and its figures on /metrics."""
        metrics.round(fields["sync_s"], fields.get("bytes", 0), fields.get("wire_bytes", 0))
        emit("round", **fields, **extra)
    if args.start_file:
        emit("ready", worker=args.worker)
        wait_for_start(Path(args.start_file), args.start_timeout)
    t_start = time.perf_counter()
    try:
        if args.model == "synthetic":
            rng = np.random.default_rng(worker_seed(args.seed, rank))
            params = np.zeros(job.n_values, np.float32)
            for r in range(args.rounds):
                grad = rng.standard_normal(job.n_values, dtype=np.float32)
                t0, at = time.perf_counter(), time.monotonic()
                params = sync.step(r, params, grad)
                # digest of what came back, so a test can check every round's sums exactly
                round_done(_round_fields(sync, RoundStats(r, 0.0, 0.0,
                                                          time.perf_counter() - t0, at)),
                           result_sha256=hashlib.sha256(np.asarray(params).tobytes()).hexdigest())
            acc = None
        else:
            from host_stack.train.data import digits, shard
            from host_stack.train.loop import accuracy, train_worker
            from host_stack.train.models import build_model, flat_params

            model = build_model(args.model, args.seed)
            x_tr, y_tr, x_te, y_te = digits(seed=args.seed)
            xs, ys = shard(x_tr, y_tr, rank, job.plan.workers)
            def on_round(rs: RoundStats) -> None:
                extra = {}
                if args.eval_every and (rs.round + 1) % args.eval_every == 0:
                    extra["accuracy"] = accuracy(model, x_te, y_te)
                round_done(_round_fields(sync, rs), **extra)

            train_worker(model, xs, ys, sync, args.rounds, args.batch,
                         seed=worker_seed(args.seed, rank), on_round=on_round)
            params = flat_params(model)
            acc = accuracy(model, x_te, y_te)
        counters = dict(getattr(getattr(sync, "transport", None), "counters", {}))
        emit("done", worker=args.worker, rank=rank, accuracy=acc,
             wall_s=time.perf_counter() - t_start, counters=counters,
             params_sha256=hashlib.sha256(np.asarray(params).tobytes()).hexdigest())
    finally:
        sync.close()
        if exporter is not None:
            exporter.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return run(args)
    except TransportError as exc:
        print(f"worker {args.worker}: error: {exc}", file=sys.stderr, flush=True)
        return 3
    except ValueError as exc:
        print(f"worker {args.worker}: error: {exc}", file=sys.stderr, flush=True)
        return 2
    except MetricsError as exc:
        print(f"worker {args.worker}: error: --metrics: {exc}", file=sys.stderr, flush=True)
        return 2
    except OSError as exc:  # e.g. its address is taken or not on this host
        print(f"worker {args.worker}: error: socket: {exc}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())

