"""`inart bench transport`: the INA transport against a plain UDP sender, side by side.

Both runs move the same packets (GRAD packets of N int32 values) over loopback in one
invocation:
- ``ina``: one worker's WorkerTransport against a real PS process (``python -m
  host_stack.ina.ps --mode sum``): windowed, reliable, every chunk answered by a RESULT;
- ``plain``: the same pre-packed packets sent back to back with ``sendto`` to a process that
  only counts them - the ceiling a Python sender reaches on this machine (no window, no
  RESULTs, no retransmission; packets the receiver drops are simply not counted).
Rates are chunks/s delivered and Mbit/s of Ethernet frames (payload + 42 bytes of headers).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from control_plane.repo import child_env
from host_stack.ina import wire
from host_stack.ina.addresses import loopback
from host_stack.ina.jobplan import star_plan
from host_stack.ina.pacing import FRAME_OVERHEAD
from host_stack.ina.transport import PsLink, TransportConfig, WorkerTransport, make_socket


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunks", type=int, default=20_000, help="chunks per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (INA) / repeats (plain)")
    parser.add_argument("--n", type=int, default=wire.DEFAULT_N, help="int32 values per packet")
    parser.add_argument("--window", type=int, default=32, help="INA outstanding chunks")
    parser.add_argument("--json", default=None, help="write the results as JSON here")
    parser.set_defaults(func=run)


def _sink(addr: tuple[str, int], expected: int, idle_s: float, out) -> None:
    """Count packets until ``expected`` arrived or nothing came for ``idle_s``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
    sock.bind(addr)
    out.put("ready")
    sock.settimeout(idle_s)
    buf = bytearray(2048)
    count, first, last = 0, None, None
    try:
        while count < expected:
            sock.recv_into(buf)
            last = time.perf_counter()
            first = first or last
            count += 1
    except TimeoutError:
        pass
    out.put((count, (last - first) if count > 1 else 0.0))


def plain_udp(rows: np.ndarray, repeats: int) -> dict:
    """Send every row ``repeats`` times back to back; the receiver times and counts them."""
    addr = ("127.0.0.1", loopback(["sink"]).entries["sink"][1])
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    expected = rows.shape[0] * repeats
    proc = ctx.Process(target=_sink, args=(addr, expected, 2.0, out), daemon=True)
    proc.start()
    try:
        if out.get(timeout=30) != "ready":
            raise RuntimeError("bench transport: the UDP sink did not start")
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * 1024 * 1024)
        packets = [rows[i].tobytes() for i in range(rows.shape[0])]
        t0 = time.perf_counter()
        for _ in range(repeats):
            for p in packets:
                sock.sendto(p, addr)
        send_s = time.perf_counter() - t0
        sock.close()
        delivered, rx_s = out.get(timeout=60)
    finally:
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()
    seconds = max(rx_s, 1e-9)
    return {"mode": "plain", "chunks": delivered, "sent": expected, "seconds": seconds,
            "send_seconds": send_s}


def ina(chunks: int, rounds: int, n: int, window: int, workdir: Path) -> dict:
    """One worker exchanging ``rounds`` rounds with a PS process in sum mode."""
    plan_path = workdir / "plan.json"
    star_plan(1, [1.0]).save(plan_path)
    addrs = loopback(["s1", "w1"])
    addr_path = workdir / "addresses.json"
    addr_path.write_text(addrs.to_json())
    stats_path = workdir / "s1.stats.json"
    env = child_env()
    cmd = [sys.executable, "-m", "host_stack.ina.ps", "--plan", str(plan_path), "--ps", "s1",
           "--addresses", str(addr_path), "--mode", "sum", "--model", "synthetic",
           "--values", str(chunks * n), "--n", str(n), "--stats", str(stats_path),
           "--idle-exit", "60"]
    ps = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    try:
        ready, _, _ = select.select([ps.stdout], [], [], 60)
        line = ps.stdout.readline() if ready else ""
        if '"ready"' not in line:
            raise RuntimeError(f"bench transport: PS did not start ({line.strip()!r})")
        cfg = TransportConfig(n=n, window=window)
        tr = WorkerTransport(make_socket(addrs["w1"]), 1, 0, [PsLink("s1", addrs["s1"], None)],
                             cfg)
        tr.hello()
        payload = np.random.default_rng(0).integers(-1000, 1000, (chunks, n), dtype=np.int32)
        t0 = time.perf_counter()
        for r in tqdm(range(rounds), desc="ina", unit="round", leave=False):
            result = tr.exchange(r, [payload])
        seconds = time.perf_counter() - t0
        if not np.array_equal(result[0], payload):
            raise RuntimeError("bench transport: RESULT sums differ from what was sent")
        counters = dict(tr.counters)
        tr.close()
    finally:
        ps.terminate()
        ps.wait(timeout=10)
    return {"mode": "ina", "chunks": chunks * rounds, "sent": counters.get("grad_sent", 0),
            "seconds": seconds, "retx": counters.get("retx_sent", 0), "window": window}


def run(args: argparse.Namespace) -> int:
    if args.chunks < 1 or args.rounds < 1 or not 1 <= args.n <= 362:
        print("bench transport: --chunks and --rounds >= 1, --n in 1..362", file=sys.stderr)
        return 2
    frame_bits = (wire.packet_len(args.n) + FRAME_OVERHEAD) * 8
    with tempfile.TemporaryDirectory(prefix="inart-bench-") as tmp:
        res_ina = ina(args.chunks, args.rounds, args.n, args.window, Path(tmp))
    hdrs = wire.headers(args.chunks, wire.TYPE_GRAD, 1, 0, np.arange(args.chunks),
                        np.arange(args.chunks) % 4096, 1)
    rows = wire.pack_batch(hdrs, np.zeros((args.chunks, args.n), np.int32), n=args.n)
    res_plain = plain_udp(rows, args.rounds)
    results = [res_ina, res_plain]
    for r in results:
        r["chunks_per_s"] = r["chunks"] / r["seconds"]
        r["mbit_per_s"] = r["chunks_per_s"] * frame_bits / 1e6
    ratio = res_ina["chunks_per_s"] / res_plain["chunks_per_s"]
    print(f"loopback, N={args.n} ({frame_bits // 8} B frames), {args.chunks} chunks x "
          f"{args.rounds} rounds")
    print(f"{'mode':<6} {'chunks':>9} {'seconds':>8} {'chunks/s':>10} {'Mbit/s':>8}  notes")
    for r in results:
        note = (f"window {r['window']}, {r['retx']} retx, every chunk answered"
                if r["mode"] == "ina" else
                f"{r['sent']} sent, {r['sent'] - r['chunks']} not delivered, no answers")
        print(f"{r['mode']:<6} {r['chunks']:>9} {r['seconds']:>8.3f} {r['chunks_per_s']:>10.0f} "
              f"{r['mbit_per_s']:>8.1f}  {note}")
    print(f"ratio ina / plain UDP sender: {ratio:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "ratio": ratio}, indent=1))
    return 0
