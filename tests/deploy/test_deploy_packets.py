"""After `inart install` onto a standalone switch on veths, INA works: two workers' GRAD
packets come out as ONE aggregated packet to the PS, and the PS's RESULT is replicated to both
workers (root only: veth pairs)."""

from __future__ import annotations

import select
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from control_plane.deploy.addressing import assign
from control_plane.model.plan import Flow, Plan
from control_plane.model.topology import Link, Node, Topology
from control_plane.p4build import sources
from emulation.targets import SwitchProcess, SwitchSpec, get_target
from host_stack.ina import wire
from host_stack.netns import can_create_veths, veth_pairs
from tests.deploy.conftest import free_port

REASON = can_create_veths()
N = int(sources.load_build_info()["N"])


def star_plan() -> Plan:
    """Workers w1, w2 and PS s1 on switch v1; both workers aggregated at v1."""
    nodes = [Node("v1", "switch", 6.0), Node("s1", "ps", 4.0), Node("w1", "worker"),
             Node("w2", "worker")]
    links = [Link(a, b, 6.0) for h in ("s1", "w1", "w2") for a, b in ((h, "v1"), ("v1", h))]
    topo = Topology(nodes, links, name="star")
    flows = [Flow(w, "s1", "v1", (w, "v1")) for w in ("w1", "w2")]
    return Plan("manual", topo, {"s1": 1.0}, flows,
                meta={"stream_paths": {"v1->s1": ["v1", "s1"]}}).finalize()


def raw_socket(iface: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((iface, 0x0003))  # ETH_P_ALL, bound before anything is sent
    return s


def ina_frames(sock: socket.socket, timeout: float, dport: int) -> list[Ether]:
    """INA frames (UDP to ``dport``) arriving within ``timeout`` s (quiet 0.5 s ends it)."""
    out, deadline = [], time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([sock], [], [], min(left, 0.5 if out else left))
        if not ready:
            break
        pkt = Ether(sock.recv(65535))
        if UDP in pkt and pkt[UDP].dport == dport:
            out.append(pkt)
    return out


def frame(src_mac: str, dst_mac: str, src: str, dst: str, dport: int,
          hdr: wire.InaHeader, values: np.ndarray) -> bytes:
    return bytes(Ether(src=src_mac, dst=dst_mac) / IP(src=src, dst=dst)
                 / UDP(sport=40000, dport=dport) / Raw(wire.pack(hdr, values, n=N)))


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_installed_switch_aggregates_and_replicates(target, tmp_path) -> None:
    plan = star_plan()
    plan_file = tmp_path / "star.json"
    plan.save(plan_file)
    addr = assign(plan.topology)
    grpc = f"127.0.0.1:{free_port()}"
    with veth_pairs(f"id{free_port() % 10000}", 3) as pairs:
        host_end = {}  # host -> its end of the veth pair whose other end is its switch port
        ports = {}
        for (hosts_side, switch_side), host in zip(pairs, ("s1", "w1", "w2"), strict=True):
            ports[addr.port[("v1", host)]] = switch_side
            host_end[host] = hosts_side
        socks = {h: raw_socket(end) for h, end in host_end.items()}
        spec = SwitchSpec(1, ports, grpc)
        try:
            with SwitchProcess(get_target(target), spec, log=tmp_path / "switch.log"):
                proc = subprocess.run(
                    [sys.executable, "-m", "control_plane.cli", "install", "--plan",
                     str(plan_file), "--switch", f"v1={grpc}", "--target", target],
                    capture_output=True, text=True, timeout=120)
                assert proc.returncode == 0, proc.stderr
                rng = np.random.default_rng(1)
                values = {w: rng.integers(-1000, 1000, N) for w in ("w1", "w2")}
                for rank, w in enumerate(("w1", "w2")):
                    hdr = wire.InaHeader(type=wire.TYPE_GRAD, job=plan.job, round=1, chunk=3,
                                         slot=3, count=1, bitmap=wire.rank_bit(rank))
                    socks[w].send(frame(addr.mac[w], addr.mac["v1"], addr.ip[w],
                                        addr.ip["s1"], wire.GRAD_PORT, hdr, values[w]))
                got = ina_frames(socks["s1"], 5.0, wire.GRAD_PORT)
                assert len(got) == 1, f"expected one aggregated packet, got {len(got)}"
                pkt = got[0]
                hdr, vals = wire.unpack(bytes(pkt[Raw].load), n=N)
                assert (pkt[IP].src, pkt[IP].dst) == (addr.agg_addr["v1"], addr.ip["s1"])
                assert pkt[Ether].dst == addr.mac["s1"]
                assert (hdr.count, hdr.bitmap, hdr.flags) == (2, 0b11, wire.FLAG_AGGREGATED)
                assert np.array_equal(vals, values["w1"] + values["w2"])

                result = wire.InaHeader(type=wire.TYPE_RESULT, job=plan.job, round=1, chunk=3,
                                        slot=3, count=2, bitmap=0b11)
                socks["s1"].send(frame(addr.mac["s1"], addr.mac["v1"], addr.ip["s1"],
                                       addr.result_addr(plan.job), wire.RESULT_PORT, result,
                                       vals))
                for w in ("w1", "w2"):
                    copies = ina_frames(socks[w], 5.0, wire.RESULT_PORT)
                    assert [(c[IP].dst, c[Ether].dst) for c in copies] == [
                        (addr.ip[w], addr.mac[w])], f"RESULT copies to {w}"
        finally:
            for sock in socks.values():
                sock.close()
