"""`inart bench transport`: the INA transport against iperf3 and a plain Python UDP sender.

The same datagrams (GRAD packets of N int32 values, 24 + 4 N bytes of UDP payload) on the same
path, one path after the other in one invocation: loopback, and a veth pair into a network
namespace (root only; host_stack/netns.py, names prefixed ``bt``):
- ``ina``: one worker's WorkerTransport against a real PS process (``python -m
  host_stack.ina.ps --mode sum``): windowed, reliable, every chunk answered by a RESULT,
  every sum checked.  Its pkt/s are chunks delivered and answered per second.  As configured
  by default UDP GSO is used on loopback only; the other setting runs too, for comparison:
  ``ina-nogso`` on loopback, ``ina-gso`` (``--gso all``) on the veth.
- ``iperf3``: ``iperf3 -u -l SIZE -b 0`` (Debian's iperf3): pkt/s are the datagrams its
  server received per second (iperf3 floods; what its receiver dropped is not counted).
- ``python``: the same pre-packed packets sent back to back with ``sendto`` to a process
  that counts them: what a per-packet Python sender reaches.
Mbit/s count Ethernet frames (payload + 42 bytes of headers).  Each figure is one line:
name, value, unit, ratio, goal (the INA goal: >= 0.5 x iperf3's packet rate).
"""

from __future__ import annotations

import argparse
import json
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from control_plane.cli.args import add_json, add_quiet, write_json
from control_plane.cli.args import progress as progress_bar
from control_plane.repo import child_env
from host_stack.ina import wire
from host_stack.ina.addresses import AddressMap, free_udp_ports
from host_stack.ina.jobplan import star_plan
from host_stack.ina.pacing import FRAME_OVERHEAD
from host_stack.ina.transport import PsLink, TransportConfig, WorkerTransport, make_socket
from host_stack.netns import Netns, can_create_veths, ip

GOAL_VS_IPERF = 0.5
NS, WORKER_DEV, PS_DEV = "bt-ps", "bt-w0", "bt-p0"
WORKER_IP, PS_IP = "10.213.0.1", "10.213.0.2"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunks", type=int, default=50_000, help="INA chunks per round")
    parser.add_argument("--rounds", type=int, default=4, help="INA rounds")
    parser.add_argument("--seconds", type=float, default=3.0, help="iperf3 run time")
    parser.add_argument("--n", type=int, default=wire.DEFAULT_N, help="int32 values per packet")
    parser.add_argument("--window", type=int, default=TransportConfig.window,
                        help="INA outstanding chunks")
    parser.add_argument("--paths", default="loopback,veth", help="loopback and/or veth")
    add_json(parser, "the figures")
    add_quiet(parser)
    parser.set_defaults(func=run)


class Route:
    """Where the receivers run: loopback in this namespace, or a namespace behind a veth."""

    def __init__(self, name: str, dst_ip: str, src_ip: str, prefix: list[str]) -> None:
        self.name, self.dst_ip, self.src_ip, self.prefix = name, dst_ip, src_ip, prefix

    def spawn(self, cmd: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen([*self.prefix, *cmd], env=child_env(), text=True, **kw)


def _ready(proc: subprocess.Popen, what: str) -> None:
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    line = proc.stdout.readline() if ready else ""
    if "ready" not in line:
        raise RuntimeError(f"bench transport: {what} did not start ({line.strip()!r})")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def ina(path: Route, chunks: int, rounds: int, n: int, window: int, workdir: Path,
        gso: str) -> dict:
    """One worker exchanging ``rounds`` rounds with a PS process in sum mode."""
    plan_path = workdir / "plan.json"
    star_plan(1, [1.0]).save(plan_path)
    ps_port, w_port = free_udp_ports(2)
    addrs = AddressMap({"s1": (path.dst_ip, ps_port), "w1": (path.src_ip, w_port)})
    (workdir / "addresses.json").write_text(addrs.to_json())
    ps = path.spawn([sys.executable, "-m", "host_stack.ina.ps", "--plan", str(plan_path),
                     "--ps", "s1", "--addresses", str(workdir / "addresses.json"),
                     "--mode", "sum", "--model", "synthetic", "--values", str(chunks * n),
                     "--n", str(n), "--gso", gso, "--idle-exit", "60"],
                    stdout=subprocess.PIPE)
    try:
        _ready(ps, "the PS")
        tr = WorkerTransport(make_socket(addrs["w1"]), 1, 0, [PsLink("s1", addrs["s1"], None)],
                             TransportConfig(n=n, window=window, gso=gso))
        tr.hello()
        payload = np.random.default_rng(0).integers(-1000, 1000, (chunks, n), dtype=np.int32)
        t0 = time.perf_counter()
        for r in progress_bar(range(rounds), desc=f"ina {path.name} gso {gso}", unit="round",
                      leave=False):
            result = tr.exchange(r, [payload])
        seconds = time.perf_counter() - t0
        if not np.array_equal(result[0], payload):
            raise RuntimeError("bench transport: RESULT sums differ from what was sent")
        counters = dict(tr.counters)
        tr.close()
    finally:
        _stop(ps)
    return {"packets": chunks * rounds, "seconds": seconds,
            "retx": counters.get("retx_sent", 0),
            "spurious": counters.get("retx_spurious", 0)}


def iperf3(path: Route, size: int, seconds: float) -> dict:
    """``iperf3 -u -b 0`` with ``size``-byte datagrams; what its server received."""
    port = free_udp_ports(1)[0]
    server = path.spawn(["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
    try:
        out = ""
        for _ in range(50):  # until the server listens
            time.sleep(0.1)
            proc = subprocess.run(["iperf3", "-c", path.dst_ip, "-p", str(port), "-u", "-l",
                                   str(size), "-b", "0", "-t", str(seconds), "-J"],
                                  capture_output=True, text=True, timeout=seconds + 60)
            out = proc.stdout
            if proc.returncode == 0:
                break
        else:
            raise RuntimeError(f"bench transport: iperf3 client failed: {out[-300:]}")
        total = json.loads(out)["end"]["sum"]
    finally:
        _stop(server)
    return {"packets": total["packets"] - total["lost_packets"], "seconds": total["seconds"],
            "sent": total["packets"]}


SINK = """
import socket, sys, time
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
sock.bind((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
sock.settimeout(float(sys.argv[4]))
buf, count, first, last = bytearray(2048), 0, 0.0, 0.0
try:
    while count < int(sys.argv[3]):
        sock.recv_into(buf)
        last = time.perf_counter()
        first = first or last
        count += 1
except TimeoutError:
    pass
print(count, last - first, flush=True)
"""


def python_udp(path: Route, rows: np.ndarray, repeats: int) -> dict:
    """Send every row ``repeats`` times back to back with sendto; the sink counts them."""
    port = free_udp_ports(1)[0]
    expected = rows.shape[0] * repeats
    sink = path.spawn([sys.executable, "-c", SINK, path.dst_ip, str(port), str(expected),
                       "2.0"], stdout=subprocess.PIPE)
    try:
        _ready(sink, "the UDP sink")
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        packets = [rows[i].tobytes() for i in range(rows.shape[0])]
        addr = (path.dst_ip, port)
        for _ in range(repeats):
            for p in packets:
                sock.sendto(p, addr)
        sock.close()
        delivered, seconds = sink.communicate(timeout=120)[0].split()
    finally:
        _stop(sink)
    return {"packets": int(delivered), "seconds": max(float(seconds), 1e-9),
            "sent": expected}


def figures(path: str, res: dict[str, dict], frame: int) -> list[dict]:
    """The labelled lines of one path: pkt/s and Mbit/s of each sender, ratios for INA."""
    out = []
    for r in res.values():
        pps = r["packets"] / r["seconds"]
        r["pkt_per_s"], r["mbit_per_s"] = pps, pps * frame * 8 / 1e6
    base = res.get("iperf3", {}).get("pkt_per_s")
    for mode, r in res.items():
        ratio = goal = None
        if mode.startswith("ina") and base:
            ratio = r["pkt_per_s"] / base
            goal = GOAL_VS_IPERF if mode == "ina" else None
        elif mode == "python" and "ina" in res:
            ratio = res["ina"]["pkt_per_s"] / r["pkt_per_s"]  # how far batching takes INA
        out.append({"name": f"{path}/{mode}/pkt_rate", "value": r["pkt_per_s"],
                    "unit": "pkt/s", "ratio": ratio, "goal": goal, **r})
        out.append({"name": f"{path}/{mode}/throughput", "value": r["mbit_per_s"],
                    "unit": "Mbit/s", "ratio": None, "goal": None})
    return out


def line(f: dict) -> str:
    ratio = "" if f["ratio"] is None else f"ratio {f['ratio']:.2f}"
    goal = "" if f["goal"] is None else (
        f"goal >= {f['goal']} x iperf3: {'met' if f['ratio'] >= f['goal'] else 'NOT met'}")
    if f["name"].endswith("python/pkt_rate") and f["ratio"] is not None:
        ratio += " (ina / python)"
    return f"{f['name']:<28} {f['value']:>12.0f} {f['unit']:<7} {ratio:<22} {goal}"


def run(args: argparse.Namespace) -> int:
    if args.chunks < 1 or args.rounds < 1 or not 1 <= args.n <= 362:
        print("bench transport: --chunks and --rounds >= 1, --n in 1..362", file=sys.stderr)
        return 2
    size = wire.packet_len(args.n)
    frame = size + FRAME_OVERHEAD
    hdrs = wire.headers(4096, wire.TYPE_GRAD, 1, 0, np.arange(4096), np.arange(4096), 1)
    rows = wire.pack_batch(hdrs, np.zeros((4096, args.n), np.int32), n=args.n)
    paths = [p for p in args.paths.split(",") if p]
    print(f"{size}-byte UDP payloads ({frame} B frames); ina: {args.chunks} chunks x "
          f"{args.rounds} rounds, window {args.window}; iperf3: {args.seconds:.0f} s")
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="inart-bench-") as tmp, ExitStack() as stack:
        for name in paths:
            if name == "loopback":
                path = Route("loopback", "127.0.0.1", "127.0.0.1", [])
            elif name == "veth":
                why = can_create_veths()
                if why:
                    print(f"veth: skipped ({why})")
                    continue
                ns = stack.enter_context(Netns(NS))
                link_root(ns)
                path = Route("veth", PS_IP, WORKER_IP, ns.exec_prefix())
            else:
                print(f"bench transport: --paths {name!r}: expected loopback, veth",
                      file=sys.stderr)
                return 2
            variant = ("ina-nogso", "off") if name == "loopback" else ("ina-gso", "all")
            res = {}
            for mode, gso in (("ina", TransportConfig.gso), variant):
                res[mode] = ina(path, args.chunks, args.rounds, args.n, args.window, Path(tmp),
                                gso)
            if shutil.which("iperf3"):
                res["iperf3"] = iperf3(path, size, args.seconds)
            else:
                print("iperf3 not on PATH (./dev.sh setup installs it): no iperf3 figures")
            res["python"] = python_udp(path, rows, max(1, args.chunks * args.rounds // 4096))
            for f in figures(name, res, frame):
                print(line(f))
                out.append(f)
    if args.json:
        write_json(args.json, {"figures": out})
    return 0


def link_root(ns: Netns) -> None:
    """A veth pair from this namespace (WORKER_IP) into ``ns`` (PS_IP); it goes with ``ns``."""
    ip("link", "add", WORKER_DEV, "type", "veth", "peer", "name", PS_DEV)
    ip("link", "set", PS_DEV, "netns", ns.name)
    ns.configure(PS_DEV, f"{PS_IP}/24")
    ip("addr", "add", f"{WORKER_IP}/24", "dev", WORKER_DEV)
    ip("link", "set", WORKER_DEV, "up")
