"""`inart bench target`: the highest loss-free packet rate of the embedded target and of bmv2.

Workloads (N values per INA packet, fan-in F):
- forward: IPv4 frames routed by an lpm table (the test program forward.p4);
- aggregate: INA GRAD packets, F workers per chunk, all summed in switch registers
  (aggregate.p4, N = 32), so F-1 of every F packets are absorbed and one is emitted;
- ina: the same packets through the testbed's own program (p4src/build/inart.json).

Each switch runs as its own process on two veth pairs (port 1 in, port 2 out), programmed over
P4Runtime.  A paced sender offers a rate for ``--seconds``; the loss is the share of the frames
the switch should have sent (every frame, or one per complete chunk) that did not reach the far
end of port 2, counted by the kernel on that veth after the switch drained its queues.  The
rate that is searched for is the highest offered rate with less than 0.1% loss (doubling, then
bisecting).  Aggregation trials use a new round each, so a lost packet's half-filled slot never
spills into the next trial.  Embedded and bmv2 runs alternate ``--runs`` times; the figures are
medians.  The switch's own counters are read too: the program's (P4Runtime) and, for the
embedded target, why frames vanished (stats.py).  RSS: VmRSS of the switch process after its
runs.  bmv2 is the one ``emulation.targets`` finds ($INART_BMV2, PATH, /opt/p4/bin).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from control_plane.cli.args import add_json
from control_plane.cli.args import write_json as write_json_to
from control_plane.drivers.p4runtime import (
    P4Info,
    P4RuntimeClient,
    build_table_entry,
    table_update,
)
from control_plane.localhost import free_port
from control_plane.repo import P4_BUILD, NeedsCheckout, checkout_path
from emulation.targets import SwitchProcess, SwitchSpec, get_target
from emulation.targets.embedded.p4runtime_server import apply_updates, local_device
from emulation.targets.embedded.rawio import Sender
from emulation.targets.embedded.stats import describe, read_stats, reasons
from host_stack.ina import wire

PROGRAM_DIR = "tests/embedded/p4/build"  # the benchmark programs: in a checkout only
INA_DIR = P4_BUILD  # the testbed's program
PS_IP, WORKER_IP = 0x0A000002, 0x0A000001
MAC_A, MAC_B = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")


def ipv4_udp(payload: bytes, dport: int, src: int = WORKER_IP, dst: int = PS_IP) -> bytes:
    """Ethernet/IPv4/UDP frame with a correct IPv4 checksum."""
    total = 20 + 8 + len(payload)
    hdr = bytearray(20)
    hdr[0], hdr[8], hdr[9] = 0x45, 64, 17
    hdr[2:4] = total.to_bytes(2, "big")
    hdr[12:16], hdr[16:20] = src.to_bytes(4, "big"), dst.to_bytes(4, "big")
    csum = sum(int.from_bytes(hdr[i:i + 2], "big") for i in range(0, 20, 2))
    while csum >> 16:
        csum = (csum & 0xFFFF) + (csum >> 16)
    hdr[10:12] = (~csum & 0xFFFF).to_bytes(2, "big")
    udp = (40000).to_bytes(2, "big") + dport.to_bytes(2, "big") + \
        (8 + len(payload)).to_bytes(2, "big") + b"\x00\x00"
    return MAC_B + MAC_A + b"\x08\x00" + bytes(hdr) + udp + payload


def forward_frames(count: int) -> list[bytes]:
    return [ipv4_udp(bytes(64), 5000 + i % 16) for i in range(count)]


def aggregate_frames(chunks: int, fan_in: int, n: int, first_round: int = 1) -> list[bytes]:
    """GRAD packets chunk by chunk, every worker of a chunk in a row (slot = chunk % 512)."""
    frames = []
    for c in range(chunks):
        for rank in range(fan_in):
            h = wire.InaHeader(type=wire.TYPE_GRAD, job=1, round=first_round + c // 512, chunk=c,
                               slot=c % 512, count=1, bitmap=wire.rank_bit(rank))
            frames.append(ipv4_udp(wire.pack(h, [rank + i for i in range(n)], n),
                                   wire.GRAD_PORT, src=WORKER_IP + rank))
    return frames


def program_updates(workload: str, p4info: P4Info, fan_in: int) -> list[Any]:
    """The table entries each workload needs (port 2 is the PS / next hop)."""
    if workload == "ina":  # the testbed's program (p4src/): one aggregation entry per worker
        route = build_table_entry(p4info, "InaIngress.route_dst",
                                  {"dst_addr": (0x0A000000, 8)}, "InaIngress.set_next_hop",
                                  {"port": 2, "dst_mac": 0x020000000009,
                                   "src_mac": 0x02000000000A})
        ups = [table_update(route)]
        for rank in range(fan_in):
            te = build_table_entry(p4info, "InaIngress.ina_aggregate",
                                   {"job": 1, "ps_addr": PS_IP, "worker_addr": WORKER_IP + rank},
                                   "InaIngress.aggregate",
                                   {"pool_base": 0, "pool_size": 4096, "fan_in": fan_in,
                                    "rank": rank, "agg_addr": 0x0A0000FE})
            ups.append(table_update(te))
        return ups
    if workload == "forward":
        te = build_table_entry(p4info, "MyIngress.route",
                               {"hdr.ipv4.dst_addr": (0x0A000000, 8)},
                               "MyIngress.forward", {"port": 2, "dmac": 0x020000000009})
        return [table_update(te)]
    route = build_table_entry(p4info, "MyIngress.route", {"hdr.ipv4.dst_addr": (0x0A000000, 8)},
                              "MyIngress.route_to", {"port": 2})
    agg = build_table_entry(p4info, "MyIngress.agg",
                            {"hdr.ina.job": 1, "hdr.ipv4.dst_addr": PS_IP},
                            "MyIngress.aggregate", {"pool_base": 0, "fan_in": fan_in,
                                                    "ps_port": 2})
    return [table_update(route), table_update(agg)]


def load_build(name: str) -> tuple[bytes, P4Info]:
    if name == "ina":
        return ((INA_DIR / "inart.json").read_bytes(),
                P4Info.from_file(INA_DIR / "inart.p4info.txtpb"))
    try:
        programs = checkout_path(PROGRAM_DIR, f"workload {name!r} (only 'ina' ships)")
    except NeedsCheckout as exc:
        raise SystemExit(f"inart bench target: {exc}") from None
    json_path = programs / f"{name}.json"
    if not json_path.exists():
        raise SystemExit(f"{json_path} is missing: compile tests/embedded/p4 (build.py)")
    return json_path.read_bytes(), P4Info.from_file(programs / f"{name}.p4info.txt")


def in_process_rate(workload: str, frames: list[bytes], fan_in: int, seconds: float) -> float:
    """Frames/s through Switch.process_batch on this core (no sockets)."""
    config, p4info = load_build(workload)
    switch, servicer = local_device(config, p4info.proto)
    apply_updates(servicer, *program_updates(workload, p4info, fan_in))
    batch = [(1, f) for f in frames]
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        switch.process_batch(batch)
        done += len(batch)
    return done / (time.perf_counter() - start)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def start_switch(kind: str, ifaces: list[str], grpc_port: int) -> SwitchProcess:
    """A switch of ``kind`` on ``ifaces`` (ports 1..n), started through the targets' interface."""
    spec = SwitchSpec(0, {i + 1: name for i, name in enumerate(ifaces)},
                      f"127.0.0.1:{grpc_port}", log_level="error")
    return SwitchProcess(get_target(kind), spec).__enter__()  # started and answering


def processed_count(client: P4RuntimeClient, workload: str) -> int:
    """Packets the switch program has counted, from its own counters over P4Runtime."""
    if workload == "forward":
        return sum(value.packets for _, value in client.read_direct_counters("MyIngress.route"))
    name = "InaIngress.events" if workload == "ina" else "MyIngress.events"
    return sum(value.packets for value in client.read_counters(name).values())


def iface_count(iface: str, which: str = "rx_packets") -> int:
    """A kernel interface counter: what crossed the veth, at no cost to either switch."""
    return int(Path(f"/sys/class/net/{iface}/statistics/{which}").read_text())


BURST_S = 200e-6  # the sender's frames leave in bursts this far apart


def paced_send(sender: Sender, frames: list[bytes], rate: float, count: int) -> tuple[int, float]:
    """Send ``count`` frames (cycling through ``frames``) at ``rate`` frames/s in bursts of
    about 200 us; returns (frames the kernel took, seconds it took)."""
    burst = max(1, int(rate * BURST_S))
    interval = burst / rate
    sent, i = 0, 0
    start = next_at = time.perf_counter()
    while sent < count:
        k = min(burst, count - sent)
        chunk = frames[i:i + k]
        if len(chunk) < k:
            chunk += frames[:k - len(chunk)]
        i = (i + k) % len(frames)
        wait = next_at - time.perf_counter()
        if wait > 0.001:
            time.sleep(wait - 0.0005)
        while time.perf_counter() < next_at:
            pass
        sent += k - sender.send(chunk)
        next_at += interval
    return sent, time.perf_counter() - start


def settle(iface: str, quiet: float = 0.25, limit: float = 5.0) -> tuple[int, float]:
    """Wait until the switch stops sending (``iface``'s receive count stays put): the count and
    when it last grew (perf_counter)."""
    last, since = iface_count(iface), time.perf_counter()
    deadline = since + limit
    while time.perf_counter() < deadline:
        time.sleep(0.02)
        now = iface_count(iface)
        if now != last:
            last, since = now, time.perf_counter()
        elif time.perf_counter() - since >= quiet:
            break
    return last, since


@dataclass
class Trial:
    """One offered rate: what was sent, what should have come out, what did."""

    requested: float
    offered: float
    sent: int
    expected: int
    received: int
    counted: int  # by the program's own counters
    out_rate: float  # frames out per second, from the first sent to the last out
    drops: dict[str, int] | None = None  # embedded only: why frames vanished

    @property
    def loss(self) -> float:
        return 1.0 - self.received / self.expected if self.expected else 1.0


@dataclass
class Rig:
    """A programmed switch on two veth pairs and the sender into it."""

    kind: str
    workload: str
    fan_in: int
    n: int
    client: P4RuntimeClient
    address: str
    pid: int
    sender: Sender
    out_iface: str
    trials: int = 0

    def frames(self) -> tuple[list[bytes], int]:
        """This trial's frames (a fresh round for aggregation) and frames per output."""
        self.trials += 1
        if self.workload == "forward":
            return forward_frames(512), 1
        return aggregate_frames(512, self.fan_in, self.n, first_round=self.trials), self.fan_in

    def trial(self, rate: float, seconds: float) -> Trial:
        frames, per_output = self.frames()
        count = max(per_output, int(rate * seconds) // per_output * per_output)
        stats0 = read_stats(self.address) if self.kind == "embedded" else None
        counted0 = processed_count(self.client, self.workload)
        out0 = iface_count(self.out_iface)
        start = time.perf_counter()
        sent, elapsed = paced_send(self.sender, frames, rate, count)
        out, last = settle(self.out_iface)
        received = out - out0
        drops = reasons(read_stats(self.address), since=stats0) if stats0 else None
        counted = processed_count(self.client, self.workload) - counted0
        return Trial(rate, sent / elapsed, sent, sent // per_output, received, counted,
                     received / max(last - start, elapsed), drops)


@contextmanager
def programmed_switch(kind: str, ifaces: list[str], workload: str, fan_in: int
                      ) -> Iterator[tuple[SwitchProcess, P4RuntimeClient, str]]:
    """A switch process of ``kind`` on ``ifaces`` with the workload's program and entries
    installed: (process, connected client, P4Runtime address); stopped on exit."""
    config, p4info = load_build(workload)
    port = free_port()
    address = f"127.0.0.1:{port}"
    switch = start_switch(kind, ifaces, port)
    try:
        client = P4RuntimeClient(address, timeout=30).connect()
        try:
            client.set_pipeline(p4info, config)
            client.write(program_updates(workload, p4info, fan_in))
            time.sleep(0.5)
            yield switch, client, address
        finally:
            client.close()
    finally:
        switch.stop()


@contextmanager
def rig(kind: str, workload: str, fan_in: int, n: int, tag: str) -> Iterator[Rig]:
    from host_stack.netns import veth_pairs

    with veth_pairs(f"ib{tag}", 2) as pairs, programmed_switch(
            kind, [pairs[0][1], pairs[1][1]], workload, fan_in) as (switch, client, address):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        try:
            sock.bind((pairs[0][0], 0))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            yield Rig(kind, workload, fan_in, n, client, address, switch.proc.pid,
                      Sender(sock), pairs[1][0])
        finally:
            sock.close()


WORKLOADS = ("forward", "aggregate", "ina")
LOSS_LIMIT = 0.001  # "loss-free": less than 0.1% of the expected frames missing
OVERLOAD_PPS = 2e6  # more than any switch here takes: the sender's own maximum


@dataclass
class Search:
    """The outcome of one rate search on one switch."""

    kind: str
    workload: str
    pps: float  # highest offered rate with loss < LOSS_LIMIT (0: none found)
    sender_limited: bool  # the sender could not offer more: the switch may do better
    overload_pps: float  # frames out per second while offered all the sender can
    rss_mib: float
    best: Trial | None
    trials: list[Trial] = field(default_factory=list)


def search(r: Rig, seconds: float, start: float, steps: int) -> Search:
    """Double the offered rate until loss appears, then bisect ``steps`` times; then one
    overload trial (what the switch gets through when offered everything the sender can)."""
    r.trial(min(start, 5000.0), 0.3)  # warm-up: code paths, caches, neighbour tables
    trials: list[Trial] = []
    best: Trial | None = None
    good, bad, rate = 0.0, 0.0, start
    limited = False

    def attempt(rate: float) -> bool:
        nonlocal best, limited
        t = r.trial(rate, seconds)
        trials.append(t)
        ok = t.loss < LOSS_LIMIT
        if ok and (best is None or t.offered > best.offered):
            best = t
        if ok and t.offered < 0.9 * rate:
            limited = True
        return ok

    while rate <= 4e6:
        if not attempt(rate):
            bad = rate
            break
        good = rate
        if limited:
            break
        rate *= 2
    for _ in range(steps if bad else 0):
        mid = (good + bad) / 2 if good else bad / 2
        if attempt(mid):
            good = mid
        else:
            bad = mid
    overload = r.trial(OVERLOAD_PPS, seconds)
    trials.append(overload)
    return Search(r.kind, r.workload, best.offered if best else 0.0, limited,
                  overload.out_rate * (r.fan_in if r.workload != "forward" else 1),
                  rss_kib(r.pid) / 1024, best, trials)


@dataclass
class Figure:
    """One printed line: a named value with its unit, its ratio to bmv2 and the goal."""

    name: str
    value: float
    unit: str
    ratio: float | None = None
    goal: str | None = None
    met: bool | None = None

    def line(self) -> str:
        value = f"{self.value:,.0f}" if self.unit == "pkt/s" else f"{self.value:,.1f}"
        text = f"{self.name:34s} {value:>10s} {self.unit:6s}"
        if self.ratio is not None:
            text += f"  {self.ratio:5.2f}x bmv2"
        if self.goal is not None:
            text += f"  goal {self.goal}: {'met' if self.met else 'NOT met'}"
        return text


def figures(results: dict[str, dict[str, list[Search]]], goal: float) -> list[Figure]:
    """Medians per workload and switch, the embedded/bmv2 ratio against the goal, RSS."""
    out = []
    for workload, by_kind in results.items():
        med = {k: statistics.median(s.pps for s in runs) for k, runs in by_kind.items()}
        bm = med.get("bmv2")
        for kind, runs in by_kind.items():
            limited = any(s.sender_limited for s in runs)
            name = f"{workload}.{kind}.loss_free_rate" + (" (sender-limited)" if limited else "")
            if kind == "embedded" and bm:
                ratio = med[kind] / bm
                out.append(Figure(name, med[kind], "pkt/s", ratio, f">= {goal:g}x bmv2",
                                  ratio >= goal))
            else:
                out.append(Figure(name, med[kind], "pkt/s"))
        over = {k: statistics.median(s.overload_pps for s in runs) for k, runs in by_kind.items()}
        for kind in by_kind:
            ratio = over[kind] / over["bmv2"] if kind == "embedded" and over.get("bmv2") else None
            out.append(Figure(f"{workload}.{kind}.overload_rate", over[kind], "pkt/s", ratio))
        for kind, runs in by_kind.items():
            out.append(Figure(f"{workload}.{kind}.rss_per_switch",
                              statistics.median(s.rss_mib for s in runs), "MiB"))
    return out


def run(args: argparse.Namespace) -> int:
    global INA_DIR
    if args.ina_build:
        INA_DIR = Path(args.ina_build)
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = sorted(set(workloads) - set(WORKLOADS))
    if unknown or not workloads:
        raise SystemExit(f"--workloads {args.workloads!r}: expected some of "
                         f"{','.join(WORKLOADS)}")
    if "ina" in workloads and not (INA_DIR / "inart.json").exists():
        print(f"(no {INA_DIR}/inart.json: the testbed program's workload 'ina' is skipped)")
        workloads.remove("ina")
    from host_stack.netns import can_create_veths

    bmv2 = get_target("bmv2")
    bmv2_reason = "disabled (--no-bmv2)" if args.no_bmv2 else bmv2.unavailable()
    kinds = ["embedded"] + (["bmv2"] if bmv2_reason is None else [])
    print(f"switches: {get_target('embedded').describe()}")
    print(f"          {bmv2.describe() if bmv2_reason is None else f'bmv2: {bmv2_reason}'}")
    print(f"N = {args.n} values per INA packet, fan-in {args.fan_in}; {args.seconds} s per "
          f"offered rate; loss-free: < {LOSS_LIMIT:.1%} lost; {args.runs} runs, medians")
    doc: dict[str, Any] = {"schema": "inart.bench.target/2", "n": args.n, "fan_in": args.fan_in,
                           "seconds": args.seconds, "runs": args.runs,
                           "switches": {k: get_target(k).describe() for k in kinds},
                           "bmv2": bmv2_reason or "present"}
    if args.in_process:
        doc["in_process_pps"] = {}
        for workload in workloads:
            frames = forward_frames(512) if workload == "forward" else \
                aggregate_frames(512, args.fan_in, args.n)
            pps = in_process_rate(workload, frames, args.fan_in, args.seconds)
            doc["in_process_pps"][workload] = pps
            print(Figure(f"{workload}.embedded.in_process_rate", pps, "pkt/s").line())
    veth_reason = can_create_veths()
    if veth_reason:
        print(f"veth runs skipped: {veth_reason}")
        write_json(args.json, doc)
        return 0
    results: dict[str, dict[str, list[Search]]] = {w: {k: [] for k in kinds} for w in workloads}
    tag = f"{os.getpid() % 997}"
    for i in range(args.runs):
        order = kinds if i % 2 == 0 else kinds[::-1]
        for workload in workloads:
            for kind in order:
                done = results[workload][kind]
                start = max(2000.0, done[-1].pps / 2) if done else args.start_rate
                with rig(kind, workload, args.fan_in, args.n, tag) as r:
                    s = search(r, args.seconds, start, args.steps)
                done.append(s)
                best = s.best
                print(f"  run {i + 1} {workload:9s} {kind:8s} {s.pps:10,.0f} pkt/s"
                      f"{' (sender-limited)' if s.sender_limited else ''}, overloaded "
                      f"{s.overload_pps:,.0f} in/s"
                      + (f"  at best: sent {best.sent}, out {best.received}/{best.expected}, "
                         f"program counted {best.counted}" if best else "")
                      + (f", drops: {describe(best.drops)}" if best and best.drops is not None
                         else ""), flush=True)
    figs = figures(results, args.goal)
    for f in figs:
        print(f.line())
    doc["figures"] = [asdict(f) for f in figs]
    doc["searches"] = {w: {k: [asdict(s) for s in runs] for k, runs in by.items()}
                       for w, by in results.items()}
    write_json(args.json, doc)
    return 0


def write_json(path: str | None, doc: dict[str, Any]) -> None:
    if path:
        write_json_to(path, doc)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=1.0,
                        help="how long each offered rate is sent")
    parser.add_argument("--runs", type=int, default=4,
                        help="rate searches per switch and workload (alternating switches)")
    parser.add_argument("--steps", type=int, default=4, help="bisection steps per search")
    parser.add_argument("--start-rate", type=float, default=8000.0,
                        help="first offered rate of a search (pkt/s)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="comma-separated: forward, aggregate, ina")
    parser.add_argument("--fan-in", type=int, default=4, help="workers per aggregated chunk")
    parser.add_argument("--n", type=int, default=32, help="values per INA packet (program: 32)")
    parser.add_argument("--goal", type=float, default=2.0,
                        help="embedded/bmv2 rate ratio to reach on every workload")
    parser.add_argument("--in-process", action="store_true",
                        help="also time the embedded pipeline alone, without sockets")
    parser.add_argument("--no-bmv2", action="store_true", help="skip bmv2 even if installed")
    add_json(parser, "the results")
    parser.add_argument("--ina-build", help="directory of the testbed program's build "
                                            "(inart.json, inart.p4info.txtpb); default p4src/build")
    parser.set_defaults(func=run)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    configure(p)
    a = p.parse_args()
    sys.exit(a.func(a))
