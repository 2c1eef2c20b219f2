"""`inart bench target`: packets/s and memory of the embedded target, beside bmv2 when present.

Workloads (N values per INA packet, fan-in F):
- forward: IPv4 frames routed by an lpm table (the test program forward.p4);
- aggregate: INA GRAD packets, F workers per chunk, all summed in switch registers
  (aggregate.p4, N = 32), so F-1 of every F packets are absorbed and one is emitted;
- ina: the same packets through the testbed's own program (p4src/build/inart.json), when built.
Modes: in-process (``Switch.process``, no sockets, one core) and through veth pairs (a switch
process on two veths and a sender; root only), where the rate is the switch's own packet
counter, read over P4Runtime before and after a timed blast that outpaces the switch.
Memory is the VmRSS of a switch process with the program and its entries installed.
Each embedded run also prints why frames vanished (the target's drop reasons, stats.py).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm import tqdm

from control_plane.drivers.p4runtime import (
    P4Info,
    P4RuntimeClient,
    build_table_entry,
    table_update,
)
from control_plane.repo import P4_BUILD, REPO
from emulation.targets import SwitchProcess, SwitchSpec, get_target
from emulation.targets.embedded.p4runtime_server import apply_updates, local_device
from emulation.targets.embedded.stats import describe, read_stats, reasons
from host_stack.ina import wire

PROGRAM_DIR = REPO / "tests" / "embedded" / "p4" / "build"
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


def aggregate_frames(chunks: int, fan_in: int, n: int) -> list[bytes]:
    """GRAD packets chunk by chunk, every worker of a chunk in a row (slot = chunk % 512)."""
    frames = []
    for c in range(chunks):
        for rank in range(fan_in):
            h = wire.InaHeader(type=wire.TYPE_GRAD, job=1, round=1 + c // 512, chunk=c,
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
    json_path = PROGRAM_DIR / f"{name}.json"
    if not json_path.exists():
        raise SystemExit(f"{json_path} is missing: compile tests/embedded/p4 (build.py)")
    return json_path.read_bytes(), P4Info.from_file(PROGRAM_DIR / f"{name}.p4info.txt")


def in_process_rate(workload: str, frames: list[bytes], fan_in: int, seconds: float
                    ) -> tuple[float, dict[str, int]]:
    """Frames/s through Switch.process on this core, and the switch's drop reasons."""
    config, p4info = load_build(workload)
    switch, servicer = local_device(config, p4info.proto)
    apply_updates(servicer, *program_updates(workload, p4info, fan_in))
    process = switch.process
    done, start = 0, time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for frame in frames:
            process(1, frame)
        done += len(frames)
    return done / (time.perf_counter() - start), reasons(switch.snapshot())


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_switch(kind: str, ifaces: list[str], grpc_port: int) -> SwitchProcess:
    """A switch of ``kind`` on ``ifaces`` (ports 1..n), started through the targets' interface."""
    spec = SwitchSpec(0, {i + 1: name for i, name in enumerate(ifaces)},
                      f"127.0.0.1:{grpc_port}", log_level="error")
    return SwitchProcess(get_target(kind), spec).__enter__()  # started and answering


def processed_count(client: P4RuntimeClient, workload: str) -> int:
    """Packets the switch program has processed, from its own counters."""
    if workload == "forward":
        return sum(value.packets for _, value in client.read_direct_counters("MyIngress.route"))
    name = "InaIngress.events" if workload == "ina" else "MyIngress.events"
    return sum(value.packets for value in client.read_counters(name).values())


def blast(iface: str, frames: list[bytes], seconds: float) -> int:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    sent, deadline = 0, time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline:
            for frame in frames[:256]:
                try:
                    s.send(frame)
                    sent += 1
                except OSError:  # transmit queue full: back off briefly
                    time.sleep(0.0005)
            frames = frames[256:] + frames[:256]
    finally:
        s.close()
    return sent


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


def veth_run(kind: str, workload: str, frames: list[bytes], fan_in: int, seconds: float,
             tag: str) -> dict[str, Any]:
    """Rate and RSS of one switch process on a veth pair (port 1 in, port 2 out), and for the
    embedded target the drop reasons counted during the blast."""
    from host_stack.netns import veth_pairs

    with veth_pairs(f"ib{tag}", 2) as pairs, programmed_switch(
            kind, [pairs[0][1], pairs[1][1]], workload, fan_in) as (switch, client, address):
        rss = rss_kib(switch.proc.pid)
        stats0 = read_stats(address) if kind == "embedded" else None
        before = processed_count(client, workload)
        start = time.perf_counter()
        sent = blast(pairs[0][0], frames, seconds)
        # the switch worked flat out during the whole blast (the sender outpaces it);
        # what it still has queued is not counted
        after = processed_count(client, workload)
        elapsed = time.perf_counter() - start
        drops = reasons(read_stats(address), since=stats0) if stats0 else None
    return {"pps": (after - before) / elapsed, "sent": sent, "rss_kib": rss, "drops": drops}


def idle_rss(kind: str, workload: str, fan_in: int) -> int:
    """VmRSS (KiB) of a switch process with no ports, program and entries installed."""
    with programmed_switch(kind, [], workload, fan_in) as (switch, _, _):
        return rss_kib(switch.proc.pid)


def run(args: argparse.Namespace) -> int:
    frames: dict[str, Callable[[], list[bytes]]] = {
        "forward": lambda: forward_frames(512),
        "aggregate": lambda: aggregate_frames(512, args.fan_in, args.n),
    }
    global INA_DIR
    if args.ina_build:
        INA_DIR = Path(args.ina_build)
    if (INA_DIR / "inart.json").exists():
        frames["ina"] = lambda: aggregate_frames(512, args.fan_in, args.n)
    else:
        print(f"(no {INA_DIR}/inart.json: the testbed program's workload 'ina' is skipped)")
    from host_stack.netns import can_create_veths

    bmv2_reason = "disabled (--no-bmv2)" if args.no_bmv2 else get_target("bmv2").unavailable()
    have_bmv2 = bmv2_reason is None
    veth_reason = None if args.veth else "disabled (--no-veth)"
    veth_reason = veth_reason or can_create_veths()
    kinds = ["embedded"] + (["bmv2"] if have_bmv2 else [])
    results: list[dict[str, Any]] = []
    steps = len(frames) * (1 + (len(kinds) if veth_reason is None else 0) + len(kinds))
    bar = tqdm(total=steps, desc="bench target", unit="run")
    for workload, make in frames.items():
        fs = make()
        row: dict[str, Any] = {"workload": workload}
        row["embedded_inproc_pps"], row["embedded_inproc_drops"] = in_process_rate(
            workload, fs, args.fan_in, args.seconds)
        bar.update()
        for kind in kinds:
            if veth_reason is None:
                r = veth_run(kind, workload, fs, args.fan_in, args.seconds, f"{os.getpid() % 997}")
                row[f"{kind}_veth_pps"] = r["pps"]
                row[f"{kind}_veth_rss_mib"] = r["rss_kib"] / 1024
                if r["drops"] is not None:
                    row[f"{kind}_veth_drops"] = r["drops"]
                bar.update()
            row[f"{kind}_rss_mib"] = idle_rss(kind, workload, args.fan_in) / 1024
            bar.update()
        if "bmv2_veth_pps" in row and row["bmv2_veth_pps"]:
            row["veth_ratio_embedded_over_bmv2"] = row["embedded_veth_pps"] / row["bmv2_veth_pps"]
        results.append(row)
    bar.close()
    print(f"\nN = {args.n} values per INA packet, fan-in {args.fan_in}, {args.seconds} s per run; "
          f"veth: {veth_reason or 'yes'}")
    for kind in kinds:
        print(f"  {get_target(kind).describe()}")
    if not have_bmv2:
        print(f"  bmv2: {bmv2_reason}")
    def num(value: float | None, fmt: str, width: int) -> str:
        return format(value, fmt).rjust(width) if value else "-".rjust(width)

    print(f"{'workload':10s} {'mode':11s} {'embedded pkt/s':>15s} {'bmv2 pkt/s':>12s} "
          f"{'embedded/bmv2':>14s} {'embedded RSS MiB':>17s} {'bmv2 RSS MiB':>13s}")
    for r in results:
        for mode in ("inproc", "veth"):
            emb, bm = r.get(f"embedded_{mode}_pps"), r.get(f"bmv2_{mode}_pps")
            if emb is None:
                continue
            print(f"{r['workload']:10s} {'in-process' if mode == 'inproc' else 'veth':11s} "
                  f"{num(emb, '.0f', 15)} {num(bm, '.0f', 12)} "
                  f"{num(emb / bm if bm else None, '.2f', 14)} "
                  f"{num(r.get('embedded_rss_mib'), '.1f', 17)} "
                  f"{num(r.get('bmv2_rss_mib'), '.1f', 13)}")
    print("RSS: VmRSS of one switch process with the program and its entries installed.")
    print("embedded drops per run (ingress_drop includes the packets aggregation absorbs; "
          "rx_overflow: the kernel's, the switch fell behind the sender):")
    for r in results:
        for mode in ("inproc", "veth"):
            if f"embedded_{mode}_drops" in r:
                print(f"  {r['workload']:10s} {'in-process' if mode == 'inproc' else 'veth':11s}"
                      f" {describe(r[f'embedded_{mode}_drops'])}")
    agg = next(r for r in results if r["workload"] == ("ina" if "ina" in frames else "aggregate"))
    goal = agg["embedded_inproc_pps"] >= 5000
    print(f"goal >= 5000 aggregation packets/s in-process ({agg['workload']}): "
          f"{'met' if goal else 'NOT met'} ({agg['embedded_inproc_pps']:.0f})")
    if args.json:
        Path(args.json).write_text(json.dumps({"n": args.n, "fan_in": args.fan_in,
                                               "seconds": args.seconds, "results": results},
                                              indent=2))
    return 0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each run")
    parser.add_argument("--fan-in", type=int, default=4, help="workers per aggregated chunk")
    parser.add_argument("--n", type=int, default=32, help="values per INA packet (program: 32)")
    parser.add_argument("--no-veth", dest="veth", action="store_false",
                        help="only in-process and memory runs")
    parser.add_argument("--no-bmv2", action="store_true", help="skip bmv2 even if installed")
    parser.add_argument("--json", help="write the results to this JSON file")
    parser.add_argument("--ina-build", help="directory of the testbed program's build "
                                            "(inart.json, inart.p4info.txtpb); default p4src/build")
    parser.set_defaults(func=run)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    configure(p)
    a = p.parse_args()
    sys.exit(a.func(a))
