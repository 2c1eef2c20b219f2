"""A parameter server process: sums its shard's GRAD packets, steps the optimizer, answers.

Run one per PS host:  python -m host_stack.ina.ps --plan plan.json --ps s1 --addresses addr.json

Behaviour (DESIGN.md section 4, rules in host_stack/ina/aggregator.py): when a chunk completes the
PS sends the RESULT to every worker (unicast copies; ``result_targets`` can name a switch's
multicast address instead); a GRAD/RETX for a completed chunk gets a unicast RESULT back to its
sender; a switch aggregate flagged OVERFLOW is dropped and the workers in its bitmap get a
CTRL_OVERFLOW_NACK so they resend it as RETX (summed here in int64).  Malformed packets, other
jobs and unexpected types are counted and dropped; nothing a packet carries stops the PS.

Checkpoint: SIGUSR1 writes ``<checkpoint-dir>/<ps>-job<job>.npz`` (parameters, momentum,
last completed round per chunk) between two packets; SIGTERM/SIGINT write the counters to
``--stats`` and exit; ``--idle-exit`` ends a PS that has heard nothing for that long.
"""

from __future__ import annotations

import argparse
import json
import select
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from host_stack.ina import wire
from host_stack.ina.addresses import Address, parse_address
from host_stack.ina.aggregator import ChunkAggregator, Verdict
from host_stack.ina.impair import ImpairedSocket, wrap
from host_stack.ina.ps_apply import OptimizerApply, SumApply
from host_stack.ina.transport import TransportError, make_socket
from host_stack.train.jobargs import load_job, process_parser, service_link


class PsServer:
    """The packet loop of one PS over an already bound socket."""

    def __init__(self, sock, job: int, n: int, aggregator: ChunkAggregator,
                 workers: list[Address], result_targets: list[Address] | None = None) -> None:
        self.sock = sock
        self.job = job
        self.n = n
        self.agg = aggregator
        self.workers = workers
        self.targets = list(workers) if result_targets is None else result_targets
        self.counters: Counter[str] = Counter()
        self.buf = bytearray(65536)
        self.stop = False
        self.checkpoint_requested = False
        self.zeros = bytes(4 * n)

    def _send(self, data: bytes, addr: Address) -> None:
        try:
            self.sock.sendto(data, addr)
            self.counters["tx"] += 1
        except BlockingIOError:
            self.counters["tx_buffer_full"] += 1
        except OSError:
            self.counters["tx_error"] += 1

    def handle(self, length: int, addr: Address) -> None:
        """Process one received packet (already in self.buf)."""
        c = self.counters
        c["rx"] += 1
        try:
            typ, flags, job, rnd, chunk, slot, count, bitmap = wire.parse_header(
                self.buf, length, self.n)
        except wire.WireError:
            c["drop_malformed"] += 1
            return
        if job != self.job:
            c["drop_wrong_job"] += 1
            if typ == wire.TYPE_ACK and slot == wire.CTRL_HELLO:
                # tell a worker of another job which job this PS serves (clear error there)
                self._send(wire.pack_fast(wire.TYPE_ACK, 0, self.job, 0, 0,
                                          wire.CTRL_HELLO_REPLY, len(self.workers), 0,
                                          self.zeros), addr)
            return
        if typ == wire.TYPE_ACK:
            if slot == wire.CTRL_HELLO:
                c["hello"] += 1
                self._send(wire.pack_fast(wire.TYPE_ACK, 0, self.job, 0, 0,
                                          wire.CTRL_HELLO_REPLY, len(self.workers), 0,
                                          self.zeros), addr)
            else:
                c["drop_control_unknown"] += 1
            return
        if typ != wire.TYPE_GRAD:
            c["drop_unexpected_type"] += 1
            return
        c["rx_retx" if flags & wire.FLAG_RETX else "rx_grad"] += 1
        if flags & wire.FLAG_AGGREGATED:
            c["rx_aggregated"] += 1
        if flags & wire.FLAG_OVERFLOW:
            c["overflow_aggregate"] += 1
            for rank, waddr in enumerate(self.workers):
                if bitmap >> rank & 1:
                    self._send(wire.pack_fast(wire.TYPE_ACK, wire.FLAG_OVERFLOW, self.job, rnd,
                                              chunk, wire.CTRL_OVERFLOW_NACK, 0, 1 << rank,
                                              self.zeros), waddr)
                    c["overflow_nack_sent"] += 1
            return
        verdict = self.agg.offer(rnd, chunk, bitmap, count, wire.payload_view(self.buf, self.n),
                                 bool(flags & wire.FLAG_RETX))
        if verdict is Verdict.COMPLETED:
            # RETX on a RESULT: a retransmission went into it (or, below, it is a re-send),
            # so its timing says nothing about the network; workers take no RTT sample.
            rflags = wire.FLAG_RETX if self.agg.retx_seen[chunk] else 0
            packet = wire.pack_fast(wire.TYPE_RESULT, rflags, self.job, rnd, chunk, slot,
                                    len(self.workers), self.agg.all_bits, self.agg.result(chunk))
            for target in self.targets:
                self._send(packet, target)
            c["result_multicast"] += 1
        elif verdict is Verdict.ANSWER_LATE and flags & wire.FLAG_AGGREGATED:
            # a switch's aggregate that lost the race to RETXs: its source is the switch, and
            # its workers already got the RESULT when the chunk completed
            c["late_aggregate_ignored"] += 1
        elif verdict is Verdict.ANSWER_LATE:
            self._send(wire.pack_fast(wire.TYPE_RESULT, wire.FLAG_RETX, self.job, rnd, chunk,
                                      slot, len(self.workers), self.agg.all_bits,
                                      self.agg.result(chunk)), addr)
            c["result_unicast"] += 1

    def poll(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for packets and handle all that are queued; True if any."""
        if isinstance(self.sock, ImpairedSocket):
            self.sock.release_due()
            timeout = min(timeout, 0.002)
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return False
        got = False
        while True:
            try:
                length, addr = self.sock.recvfrom_into(self.buf)
            except (BlockingIOError, InterruptedError):
                return got
            got = True
            self.handle(length, addr)

    def serve(self, idle_exit_s: float | None = None, on_idle=None) -> None:
        """Loop until ``stop`` is set or nothing arrived for ``idle_exit_s`` seconds."""
        last = time.monotonic()
        while not self.stop:
            if self.poll(0.1):
                last = time.monotonic()
            elif idle_exit_s is not None and time.monotonic() - last > idle_exit_s:
                self.counters["idle_exit"] += 1
                return
            if on_idle is not None:
                on_idle()

    def stats(self) -> dict[str, int]:
        return shard_stats(self.counters, self.agg)


def shard_stats(counters: Counter[str], agg: ChunkAggregator) -> dict[str, int]:
    """A PS's counters, its aggregator's and the rounds every chunk of its shard completed."""
    out = dict(counters)
    out.update({f"agg_{k}": v for k, v in agg.counters.items()})
    done = agg.completed
    out["rounds_completed"] = int(done.min()) + 1 if done.size else 0
    return out


def checkpoint(path: Path, ps: str, job: int, agg: ChunkAggregator, apply) -> Path:
    """Write the shard's state atomically (tmp file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, completed_round=agg.completed, ps=np.array(ps), job=np.array(job),
             **apply.state())
    tmp.replace(path)
    return path


def build_parser() -> argparse.ArgumentParser:
    p = process_parser("host_stack.ina.ps", __doc__, "ps")
    p.add_argument("--bind", default=None, help="host:port to bind (default: its map entry)")
    p.add_argument("--mode", choices=("train", "sum"), default="train",
                   help="RESULT = updated parameters (train) or int32 sums (sum)")
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
        if link is not None and (args.bind or args.result_to):
            raise ValueError("--service: each version brings the PS's address and result "
                             "address; drop --bind/--result-to")
        bind = job.addresses[args.ps]
        if args.bind:
            bind = parse_address(args.bind, bind[1], args.ps)
        targets = None
        if args.result_to:
            targets = [parse_address(t, wire.RESULT_PORT, "--result-to") for t in args.result_to]
        first, end = job.ranges[args.ps]
        if args.mode == "train":
            params = job.initial_params(args)[first * job.n:end * job.n]
            apply = OptimizerApply(params, job.n, job.quantizer, args.lr, args.momentum)
        else:
            apply = SumApply()
        agg = ChunkAggregator(end - first, job.n, job.plan.workers, apply)
        if link is not None:
            from host_stack.ina.ps_versions import VersionedPs  # imports grpc: only here

            server = VersionedPs(link, args.ps, active, job.n, job.n_values, agg,
                                 job.impairment)
        else:
            sock = wrap(make_socket(bind), job.impairment)
            server = PsServer(sock, job.plan.job, job.n, agg,
                              [job.addresses[w] for w in job.plan.worker_ids], targets)
    except OSError as exc:
        print(f"ps: error: cannot bind {bind[0]}:{bind[1]}: {exc.strerror}", file=sys.stderr)
        return 2
    except (ValueError, TransportError) as exc:  # PlanError, AddressError, WireError, ...
        print(f"ps: error: {exc}", file=sys.stderr)
        if link is not None:
            link.close()
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
                      "chunks": end - first, "range": [first, end]}), flush=True)
    try:
        server.serve(args.idle_exit, on_idle)
    finally:
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
