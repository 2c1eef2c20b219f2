"""Shared fixture of the INA PTF suite: the lab (hosts on switch ports), packet builders and
exact-output checks.  Runs inside the `ptf` tool against any P4Runtime target.

Test parameters (ptf --test-params): grpc_addr (required), device_id, target (bmv2 JSON
targets by default; 'tofino': Stratum's P4Runtime with the TNA build), driver ('bfrt' with
target 'tofino': bf_switchd's BF Runtime instead, with ports_file, the ports file whose ports
are brought up and give the port map), build_dir (default: the
target's committed build), p4info and bmv2_json (default: those in build_dir), port_map
('1:128,2:136,...': the test's port k is the switch's port m in table entries and multicast
groups; packets still go out and come in on PTF port k).  Every test pushes the pipeline in
setUp, which gives it empty tables, registers, counters and multicast groups.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from control_plane.deploy.pipeline import pipeline_for
from control_plane.drivers.p4runtime import P4RuntimeClient
from control_plane.p4build import sources, v1model
from host_stack.ina import wire

SWITCH_MAC = "02:00:00:00:00:01"
AGG_ADDR = "10.0.100.1"
EVENTS_COUNTER = "InaIngress.events"
NUM_PORTS = 10  # the harness (run_ptf.py) creates switch ports 1..NUM_PORTS


@dataclass(frozen=True)
class Host:
    name: str
    port: int
    ip: str
    mac: str


WORKERS = [Host(f"w{i}", i, f"10.0.0.{i}", f"00:00:0a:00:00:{i:02x}") for i in range(1, 9)]
PS1 = Host("ps1", 9, "10.0.1.1", "00:00:0a:00:01:01")
PS2 = Host("ps2", 10, "10.0.1.2", "00:00:0a:00:01:02")
HOSTS = [*WORKERS, PS1, PS2]


def _param(name: str, default=None):
    value = tu.test_params_get().get(name, default)
    if value is None:
        raise RuntimeError(f"PTF test parameter '{name}' is required (--test-params)")
    return value


def target() -> str:
    return str(_param("target", "bmv2"))


def parse_port_map(text: str) -> dict[int, int]:
    """'1:128,2:136' -> {1: 128, 2: 136} (empty text: no mapping)."""
    out = {}
    for item in filter(None, text.split(",")):
        k, _, m = item.partition(":")
        out[int(k)] = int(m)
    return out


def bfrt_tables(build: Path) -> PortMappedClient:
    """bf_switchd over BF Runtime: the program pushed, the ports file's ports up, the tests'
    port k mapped to its dev port (control_plane/drivers/bfrt/tables.py)."""
    from control_plane.drivers.bfrt.client import DEFAULT_PUSH_TIMEOUT_S
    from control_plane.drivers.bfrt.install import BfrtSwitch
    from control_plane.drivers.bfrt.tables import open_tables
    from control_plane.drivers.tofino.ports import load_ports
    from control_plane.drivers.tofino.stratum import TofinoFiles

    switch = BfrtSwitch("ptf", str(_param("grpc_addr")), load_ports(_param("ports_file")),
                        int(_param("device_id", 0)))
    tables, dev_ports = open_tables(switch, TofinoFiles.in_build(build), push_timeout=float(
        _param("push_timeout", DEFAULT_PUSH_TIMEOUT_S)))
    return PortMappedClient(tables, dev_ports)


class PortMappedClient:
    """The P4Runtime client with the tests' port numbers rewritten to the switch's (a
    Tofino's dev ports) in set_next_hop entries and multicast replicas."""

    def __init__(self, client: P4RuntimeClient, port_map: dict[int, int]):
        self._client, self._map = client, port_map

    def __getattr__(self, name: str):
        return getattr(self._client, name)

    def insert_table_entry(self, table, match, action, params=None, **kwargs):
        params = dict(params or {})
        if "port" in params:
            params["port"] = self._map.get(params["port"], params["port"])
        return self._client.insert_table_entry(table, match, action, params, **kwargs)

    def insert_multicast_group(self, group_id, replicas):
        return self._client.insert_multicast_group(
            group_id, [(self._map.get(p, p), rid) for p, rid in replicas])


class InaTest(BaseTest):
    """Base class: a fresh pipeline per test, a P4Runtime client, packet helpers."""

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.target = target()
        default = sources.BUILD_DIR / "tna" if self.target == "tofino" else sources.BUILD_DIR
        build = Path(_param("build_dir", str(default)))
        info = sources.load_build_info(build)
        self.n = int(info["N"])
        self.events = dict(info["events"])
        self.event_counters = list(info.get("event_counters", [EVENTS_COUNTER]))
        if self.target == "tofino" and _param("driver", "p4runtime") == "bfrt":
            self.client = bfrt_tables(build)
            return
        client = P4RuntimeClient(_param("grpc_addr"), int(_param("device_id", 0)),
                                 election_id=(0, 1), timeout=30.0)
        client.connect()
        if self.target == "tofino":
            pipeline = pipeline_for("tofino", build.parent)
            client.set_pipeline(pipeline.p4info, pipeline.device_config())
        else:
            json_path, p4info_path = v1model.artifact_paths(build)
            client.set_pipeline(_param("p4info", str(p4info_path)),
                                _param("bmv2_json", str(json_path)))
        self.client = PortMappedClient(client, parse_port_map(str(_param("port_map", ""))))

    def tearDown(self) -> None:
        self.client.close()
        BaseTest.tearDown(self)

    # -- control plane ---------------------------------------------------------------------
    def add_host_routes(self, hosts=HOSTS) -> None:
        for h in hosts:
            self.client.insert_table_entry(
                "InaIngress.route_dst", {"dst_addr": f"{h.ip}/32"}, "InaIngress.set_next_hop",
                {"port": h.port, "dst_mac": h.mac, "src_mac": SWITCH_MAC})

    def add_aggregation(self, job: int, ps: Host, worker: Host, rank: int, fan_in: int,
                        pool_base: int = 0, pool_size: int = 64) -> None:
        self.client.insert_table_entry(
            "InaIngress.ina_aggregate",
            {"job": job, "ps_addr": ps.ip, "worker_addr": worker.ip},
            "InaIngress.aggregate",
            {"pool_base": pool_base, "pool_size": pool_size, "fan_in": fan_in, "rank": rank,
             "agg_addr": AGG_ADDR})

    def add_job(self, job: int, ps: Host, workers, pool_base: int = 0,
                pool_size: int = 64) -> None:
        """Aggregate every worker of `workers` (rank = position) for (job, ps)."""
        for rank, w in enumerate(workers):
            self.add_aggregation(job, ps, w, rank, len(workers), pool_base, pool_size)

    # -- packets ---------------------------------------------------------------------------
    def values(self, seed: int, low: int = -1000, high: int = 1000) -> np.ndarray:
        return np.random.default_rng(seed).integers(low, high, self.n).astype(np.int64)

    def ina(self, eth_src: str, eth_dst: str, ip_src: str, ip_dst: str, header: wire.InaHeader,
            values, ttl: int = 64, checksum_zero: bool = False, dport: int = wire.GRAD_PORT):
        udp = UDP(sport=40000, dport=dport, chksum=0) if checksum_zero else \
            UDP(sport=40000, dport=dport)
        return (Ether(src=eth_src, dst=eth_dst) / IP(src=ip_src, dst=ip_dst, ttl=ttl, id=7)
                / udp / Raw(wire.pack(header, np.asarray(values), n=self.n)))

    def grad(self, worker: Host, ps: Host, *, job: int, rnd: int, chunk: int, slot: int,
             rank: int, values, flags: int = 0, bitmap: int | None = None):
        """A GRAD packet as worker `worker` (rank `rank`) sends it to `ps`."""
        hdr = wire.InaHeader(type=wire.TYPE_GRAD, job=job, round=rnd, chunk=chunk, slot=slot,
                             count=1, bitmap=wire.rank_bit(rank) if bitmap is None else bitmap,
                             flags=flags)
        return self.ina(worker.mac, SWITCH_MAC, worker.ip, ps.ip, hdr, values)

    def forwarded_grad(self, worker: Host, ps: Host, *, job: int, rnd: int, chunk: int,
                       slot: int, rank: int, values, flags: int = 0):
        """What `grad(...)` looks like when the switch forwards it unaggregated to `ps`."""
        hdr = wire.InaHeader(type=wire.TYPE_GRAD, job=job, round=rnd, chunk=chunk, slot=slot,
                             count=1, bitmap=wire.rank_bit(rank), flags=flags)
        return self.ina(SWITCH_MAC, ps.mac, worker.ip, ps.ip, hdr, values, ttl=63,
                        checksum_zero=True)

    def aggregate(self, ps: Host, *, job: int, rnd: int, chunk: int, slot: int, count: int,
                  bitmap: int, values, overflow: bool = False):
        """The one aggregated packet the switch sends to `ps`."""
        flags = wire.FLAG_AGGREGATED | (wire.FLAG_OVERFLOW if overflow else 0)
        hdr = wire.InaHeader(type=wire.TYPE_GRAD, job=job, round=rnd, chunk=chunk, slot=slot,
                             count=count, bitmap=bitmap, flags=flags)
        return self.ina(SWITCH_MAC, ps.mac, AGG_ADDR, ps.ip, hdr, values, ttl=63,
                        checksum_zero=True)

    def send(self, port: int, pkt) -> None:
        tu.send_packet(self, port, pkt)

    # -- checks ----------------------------------------------------------------------------
    def expect_exactly(self, expected, timeout: float = 2.0) -> None:
        """Exactly these (port, packet) pairs come out, in any order, and nothing else."""
        remaining = [(port, bytes(pkt)) for port, pkt in expected]
        while remaining:
            result = tu.dp_poll(self, device_number=0, timeout=timeout)
            if not isinstance(result, self.dataplane.PollSuccess):
                self.fail(f"{len(remaining)} expected packet(s) did not come out, first on "
                          f"port {remaining[0][0]}:\n{_show(remaining[0][1])}")
            got = (result.port, bytes(result.packet))
            if got not in remaining:
                hint = "\n".join(f"expected on port {p}:\n{_show(b)}" for p, b in remaining)
                self.fail(f"unexpected packet on port {result.port}:\n{_show(got[1])}\n{hint}")
            remaining.remove(got)
        tu.verify_no_other_packets(self, timeout=0.3)

    def expect_nothing(self) -> None:
        tu.verify_no_other_packets(self, timeout=0.5)

    def assert_events(self, timeout: float = 3.0, **expected: int) -> None:
        """InaIngress.events packet counts equal `expected` by name, every other event zero."""
        unknown = set(expected) - set(self.events)
        if unknown:
            raise KeyError(f"unknown event(s) {sorted(unknown)}; known: {sorted(self.events)}")
        want = {name: expected.get(name, 0) for name in self.events}
        deadline = time.monotonic() + timeout
        while True:
            got = dict.fromkeys(self.events, 0)
            for counter in self.event_counters:  # Tofino spreads the events over several
                cells = self.client.read_counters(counter)
                for name, i in self.events.items():
                    got[name] += cells[i].packets if i in cells else 0
            if got == want or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        diff = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
        self.assertEqual(diff, {}, f"event counters (got, want) differ: {diff}")


def _show(data: bytes) -> str:
    pkt = Ether(data)
    text = pkt.summary()
    if Raw in pkt and len(pkt[Raw].load) >= wire.HEADER_LEN:
        load = pkt[Raw].load
        try:
            hdr, vals = wire.unpack(load, n=(len(load) - wire.HEADER_LEN) // 4)
            text += f"\n  {hdr}\n  values[:8]={vals[:8].tolist()}"
        except wire.WireError as exc:
            text += f"\n  (not INA: {exc})"
    return text
