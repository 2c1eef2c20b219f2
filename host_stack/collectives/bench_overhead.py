"""`inart bench message-overhead`: the host's own time per gloo message, which the flow-level
simulation adds before each send of a collective (``inart simulate --host-overhead-us``).

Two processes, each in its own network namespace as the emulation's hosts are, joined by one
veth pair (no shaping, no switch: the wire costs microseconds), join a gloo process group over
TCP and play ping-pong with a tiny tensor through the host stack's own p2p calls (``isend``,
``irecv``, ``wait``: what the ring and the RAT tree call per message; RSGCM's gloo
all-reduce runs the same TCP transport without the Python call).  The receiver posts its next
receive ahead, as the ring does, so gloo's rendezvous notice is already there when a message
is sent.  One round trip is two messages, each paying the sender's call into torch and gloo,
the kernel's TCP path both ways, the receiver's wake-up and its return to Python: the
overhead per message is half the median round trip (the mean, also printed, holds the
scheduler's stalls on a loaded machine too).  Root (namespaces and veths).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import timedelta

from control_plane.bench.figures import line
from control_plane.cli.args import add_json, write_json
from control_plane.localhost import free_port
from control_plane.repo import child_env

ADDRESSES = ("10.213.0.1", "10.213.0.2")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--round-trips", type=int, default=500, help="timed round trips")
    parser.add_argument("--warmup", type=int, default=50, help="untimed round trips first")
    parser.add_argument("--payload-bytes", type=int, default=4,
                        help="tensor bytes per message (float32, default one element)")
    add_json(parser, "the figure and every round trip")
    parser.set_defaults(func=run)


def worker(rank: int, init: str, dev: str, round_trips: int, warmup: int, elements: int) -> None:
    """One side of the ping-pong; rank 0 prints its round trips (seconds) as JSON."""
    os.environ["GLOO_SOCKET_IFNAME"] = dev
    import torch
    import torch.distributed as dist

    from host_stack.collectives.p2p import irecv, isend, wait

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2,
                            timeout=timedelta(seconds=60))
    out, back = torch.zeros(elements), torch.zeros(elements)
    peer, times = 1 - rank, []
    posted = irecv(back, peer, 0)
    for i in range(warmup + round_trips):
        t0 = time.perf_counter()
        if rank == 0:
            wait(isend(out, peer, 0), 30)
            wait(posted, 30)
            posted = irecv(back, peer, 0) if i + 1 < warmup + round_trips else None
        else:
            wait(posted, 30)
            posted = irecv(back, peer, 0) if i + 1 < warmup + round_trips else None
            wait(isend(out, peer, 0), 30)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(times))


def measure(round_trips: int, warmup: int, payload_bytes: int) -> list[float]:
    """Round trips in seconds, measured between two fresh namespaces (deleted afterwards)."""
    from host_stack.netns import can_create_veths, link, namespaces

    why = can_create_veths()
    if why:
        raise SystemExit(f"message-overhead: {why}")
    tag = f"mo{os.getpid() % 100000}"
    names = (f"{tag}a", f"{tag}b")
    init = f"tcp://{ADDRESSES[0]}:{free_port()}"
    elements = max(1, payload_bytes // 4)
    with namespaces(names) as (a, b):
        link(a, f"{tag}a0", b, f"{tag}b0", f"{ADDRESSES[0]}/30", f"{ADDRESSES[1]}/30")
        procs = []
        for rank, (ns, dev) in enumerate(((a, f"{tag}a0"), (b, f"{tag}b0"))):
            job = {"rank": rank, "init": init, "dev": dev, "round_trips": round_trips,
                   "warmup": warmup, "elements": elements}
            procs.append(subprocess.Popen(
                [*ns.exec_prefix(), sys.executable, "-c",
                 "import json, sys; from host_stack.collectives.bench_overhead import worker; "
                 "worker(**json.loads(sys.argv[1]))", json.dumps(job)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()))
        outs = []
        for p in procs:
            try:
                out, err = p.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            if p.returncode != 0:
                raise SystemExit(f"message-overhead: a ping-pong process failed:\n{err[-2000:]}")
            outs.append(out)
    return json.loads(outs[0].strip().splitlines()[-1])


def figure(times: list[float], payload_bytes: int) -> dict:
    """The labelled line: half the median round trip, in microseconds."""
    q = statistics.quantiles(times, n=10)
    return {"name": "collectives.message_overhead", "value": statistics.median(times) / 2 * 1e6,
            "unit": "us", "p10_us": round(q[0] / 2 * 1e6, 1), "p90_us": round(q[-1] / 2 * 1e6, 1),
            "mean_us": round(statistics.fmean(times) / 2 * 1e6, 1),
            "round_trips": len(times), "payload_bytes": payload_bytes}


def run(args: argparse.Namespace) -> int:
    for name in ("round_trips", "payload_bytes"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')}: expected >= 1")
    if args.warmup < 0:
        raise SystemExit("--warmup: expected >= 0")
    load = os.getloadavg()
    times = measure(args.round_trips, args.warmup, args.payload_bytes)
    fig = figure(times, args.payload_bytes)
    print(f"gloo p2p ping-pong between two namespaces over a veth pair, {args.payload_bytes} B "
          f"per message, {args.round_trips} round trips (load average {load[0]:.1f} "
          f"{load[1]:.1f} {load[2]:.1f}, {os.cpu_count()} CPUs):")
    print(line(fig))
    if args.json:
        write_json(args.json, {"figure": fig, "round_trips_s": times, "loadavg": load})
    return 0
