"""A Mininet network built from a control-plane topology, with P4 switch nodes.

One Mininet host per worker and PS (its own network namespace, one interface, addresses from
control_plane/deploy/addressing.py, static ARP for every peer: nothing ARPs through the
switches), one switch node per topology switch running a target of emulation/targets (the
embedded target by default, or bmv2), started without a program (control_plane/deploy pushes
it over P4Runtime).  Switch nodes stay in the root namespace like Mininet's
own switches; their P4Runtime servers listen on loopback only.

Links are tc-shaped (Mininet TCLink: htb over a FIFO, see ``queue_for``; impairments by
emulation/network/link_impair.py)
per direction to the spare capacity B(e) - b(e) times ``scale`` Mbit/s per topology unit.  The
switch -> PS direction is shaped to min(B(e) - b(e), B(s) - b(s)): the paper's PS ingress
bandwidth B(s) is a real limit here.  A worker's egress also holds its INA streams' pacing
classes under its link's class (``pace``, emulation/network/host_pacing.py).  Switch aggregation
capacity C(v) is not emulated (a software switch has no such knob).

``Network`` is a context manager: leaving it (normally, on an exception or on Ctrl-C/SIGTERM)
stops every process it started, removes every interface and leaves no namespace behind
(``leftovers`` checks it).  A run killed outright cannot clean up; the next run finds its
interfaces unclaimed and removes them (emulation/network/switch_claims.py).

Training workers (``python -m host_stack.train.worker``) are forked by default from one
fork server that imported torch once (host_stack/train/forkserver.py), each into its host's
namespaces: the torch pages are shared copy-on-write instead of loaded ~230 MB per worker
(fattree:6: 50 workers).  The process is the same module, arguments, environment, logs and
exit status as a plain start; ``fork_server=False`` (``--no-fork-server``) starts each worker
through Mininet (mnexec) as its own interpreter instead, for comparison or where forking
from a preloaded interpreter is not wanted.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from control_plane.deploy.addressing import Addressing
from control_plane.model.topology import Topology
from control_plane.processes import stop_process
from control_plane.repo import child_env
from emulation.measure.timeseries import socket_address
from emulation.network.host_pacing import MTU_QUANTUM, Stream, egress_tree, stream_counts
from emulation.network.link_impair import (
    NO_IMPAIRMENT,
    ImpairError,
    LinkImpairment,
    egress_rules,
    hold_names,
    rule_counts,
)
from emulation.network.switch_claims import ClaimError, SwitchClaims, impair_table, interfaces_of
from emulation.targets import TARGETS, SwitchProcess, SwitchSpec, TargetError, get_target
from emulation.targets.base import START_TIMEOUT_S
from emulation.targets.embedded.farm import SwitchFarm
from host_stack.train.forkserver import ForkServer, ForkServerError, forked_module

if TYPE_CHECKING:
    from emulation.cluster.run import Cluster

QUEUE_PACKETS = 64  # per interface at least; see queue_for()


class NetworkError(RuntimeError):
    """The network could not be built or a switch did not start; says which and why."""


def queue_for(workers: int, pss: int, window: int) -> int:
    """FIFO length (packets) under every link's htb class: what the transport may have in flight.

    Each (worker, PS) stream keeps at most ``window`` chunks outstanding, and every RESULT or
    retransmission answers or repeats one of them, so no link ever holds more than
    workers x PSs x window of the job's packets.  A queue that long never drops the job's own
    bursts (a paced stream's jitter at a link loaded to 100%, a Python switch draining its
    backlog, retransmissions bypassing aggregation): losses come only from ``--loss``, as in
    the lossless fabrics INA schemes assume.  It is a limit, not a standing queue: pacing keeps
    it near empty, and it costs memory only while full.  A plan-independent bound, because the
    network is built once for every scheme.
    """
    if workers < 1 or pss < 1 or window < 1:
        raise NetworkError(f"queue_for({workers}, {pss}, {window}): expected positive counts")
    return max(QUEUE_PACKETS, workers * pss * window)


def mininet_available() -> str | None:
    """None if Mininet can run here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "Mininet needs root"
    if shutil.which("mnexec") is None:
        return "mnexec not found (install Debian's mininet package: ./dev.sh setup)"
    try:
        import mininet.net  # noqa: F401
    except ImportError as exc:
        return f"Mininet's Python module is not importable ({exc}); run ./dev.sh setup"
    return None


def _switch_class(cluster: bool = False):
    from mininet.node import Switch

    class P4Switch(Switch):
        """A Mininet switch node whose datapath is a P4Runtime-programmed P4 target."""

        def __init__(self, name: str, target: str = "embedded", grpc: str = "",
                     device_id: int = 1, log_dir: str = ".", farm: SwitchFarm | None = None,
                     metrics: str | None = None, **params) -> None:
            params["inNamespace"] = False
            super().__init__(name, dpid=f"{device_id:x}", **params)
            self.target, self.grpc, self.device_id = target, grpc, device_id
            self.farm = farm  # forks the embedded switches (None: a process each)
            self.metrics = metrics  # where its /metrics is served (None: not served)
            self.log_path = Path(log_dir) / f"{name}.log"
            self.switch: SwitchProcess | None = None

        def start(self, controllers) -> None:  # noqa: ARG002 (Mininet's signature)
            ports = {self.ports[i]: i.name for i in self.intfList() if i.name != "lo"}
            launcher = getattr(self, "launcher", None)  # on a server of a cluster run
            if launcher is not None:
                self.cmd("; ".join(f"sysctl -qw net.ipv6.conf.{i}.disable_ipv6=1"
                                   for i in ports.values()))
            for iface in ports.values() if launcher is None else ():
                # no IPv6 chatter from the root namespace's kernel
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{iface}.disable_ipv6=1"],
                               capture_output=True, timeout=10)
            spec = SwitchSpec(self.device_id, ports, self.grpc, log_file=self.log_path,
                              extra=("--metrics", self.metrics) if self.metrics else ())
            launch = None if launcher is None else (
                lambda cmd, env, out: launcher.popen_in(self.pid, cmd, env, stdout=out,
                                                        stderr=subprocess.STDOUT))
            self.switch = SwitchProcess(get_target(self.target), spec, log=self.log_path,
                                        farm=self.farm, launch=launch)
            try:
                self.switch.start()
            except TargetError as exc:
                raise NetworkError(f"switch '{self.name}': {exc}") from None

        def wait_ready(self, deadline: float) -> None:
            assert self.switch is not None
            try:
                self.switch.wait_ready(deadline)
            except TargetError as exc:
                raise NetworkError(f"switch '{self.name}': {exc}") from None

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 (Mininet's name)
            if self.switch is not None:
                self.switch.stop()
            self.switch = None
            super().stop(deleteIntfs)

    if cluster:
        from emulation.cluster.nodes import cluster_mixin

        class ClusterP4Switch(cluster_mixin(), P4Switch):
            """A P4 switch node on a server; its target starts there through the node's
            connection and serves P4Runtime on the server's address."""

        return ClusterP4Switch
    return P4Switch


class Network:
    """The emulated network of one topology; use as a context manager."""

    def __init__(self, topology: Topology, addressing: Addressing, out_dir: Path,
                 target: str = "embedded", scale: float = 0.5,
                 impair: LinkImpairment = NO_IMPAIRMENT, quiet: bool = False,
                 queue_packets: int = QUEUE_PACKETS, fork_server: bool = True,
                 cluster: Cluster | None = None, metrics_dir: Path | None = None) -> None:
        if target not in TARGETS:
            raise NetworkError(f"target '{target}': expected one of {', '.join(TARGETS)}")
        if not scale > 0:
            raise NetworkError(f"scale {scale}: expected Mbit/s per topology unit > 0")
        try:
            self.impaired = impair.chosen(topology)
        except ImpairError as exc:
            raise NetworkError(str(exc)) from None
        if impair.active and cluster is not None:
            raise NetworkError(f"link impairment ({impair.describe()}): not offered with "
                               f"several servers (its rules live in each server's nftables); "
                               f"expected none")
        reason = mininet_available()
        if reason:
            raise NetworkError(reason)
        self.topo, self.addr, self.target = topology, addressing, target
        if metrics_dir is not None and cluster is not None:
            raise NetworkError("metrics: gathered on one machine; not offered with --cluster")
        # each host, and each embedded switch, serves /metrics on a Unix socket there
        # (emulation/measure/timeseries.py)
        self.metrics_dir = metrics_dir
        if queue_packets < 1:
            raise NetworkError(f"queue_packets {queue_packets}: expected >= 1")
        self.scale, self.impair, self.quiet = scale, impair, quiet
        self.queue_packets = queue_packets
        self.out_dir = out_dir.resolve()  # switch logs and host files: absolute for children
        self.net = None
        self.cluster = cluster  # nodes on other servers (emulation/cluster); None: all here
        # embedded switches fork from one parent that imported the target once (farm.py)
        self.farm = SwitchFarm() if target == "embedded" and cluster is None else None
        # training workers fork from one server that imported torch once (forkserver.py);
        # hosts on other servers start each worker over SSH
        self.forks = ForkServer(self.out_dir / "forkserver.stderr") \
            if fork_server and cluster is None else None
        self.procs: list[subprocess.Popen] = []
        self.interfaces: list[str] = []
        self._shaped: list = []
        self._nft_tables: list[str] = []  # root-namespace tables (hosts' go with their netns)
        self._holds: dict[str, list[tuple[str, str]]] = {}  # node -> its (hold peer, interface)
        self._hold_devices: list[str] = []  # root-namespace hold veths (hosts' go with theirs)
        self._hold_procs: list[subprocess.Popen] = []
        self._old_handlers: dict[int, Callable] = {}
        self.claims = SwitchClaims(topology.switches)

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Network:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, _raise_interrupt)
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def link_mbps(self, a: str, b: str) -> float:
        """Shaped rate of direction a -> b in Mbit/s."""
        spare = self.topo.links[(a, b)].spare
        node = self.topo.nodes[b]
        if node.kind == "ps":
            spare = min(spare, node.spare)
        return max(spare, 1e-6) * self.scale

    def start(self) -> None:
        from mininet.link import TCLink
        from mininet.log import setLogLevel
        from mininet.net import Mininet

        setLogLevel("error")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self.cluster is None:
            self._claim_here()
            link, host_cls, placed = TCLink, None, lambda node: {}
        else:
            from emulation.cluster.nodes import ClusterError, host_class, tunnel_link_class

            try:
                self.cluster.start(self.out_dir)
            except ClusterError as exc:
                raise NetworkError(str(exc)) from None
            assert self.cluster.tunnels is not None
            link, host_cls = tunnel_link_class(self.cluster.tunnels), host_class()
            placed = self.cluster.node_params
        net = Mininet(topo=None, build=False, controller=None, link=link,
                      autoSetMacs=False, autoStaticArp=False,
                      **({"host": host_cls} if host_cls else {}))
        self.net = net
        switch_cls = _switch_class(self.cluster is not None)
        for sw in self.topo.switches:
            net.addSwitch(sw, cls=switch_cls, target=self.target,
                          grpc=self.addr.grpc_address(sw), device_id=self.addr.device_id[sw],
                          log_dir=str(self.out_dir), farm=self.farm,
                          metrics=self.metrics_address(sw), **placed(sw))
        for host in self.topo.workers + self.topo.pss:
            net.addHost(host, ip=f"{self.addr.ip[host]}/8", mac=self.addr.mac[host],
                        **placed(host))
        done: set[frozenset[str]] = set()
        for (a, b) in self.topo.links:
            key = frozenset((a, b))
            if key in done:
                continue
            done.add(key)
            p1 = {"bw": self.link_mbps(a, b)}
            p2 = {"bw": self.link_mbps(b, a)}
            port1 = self.addr.port.get((a, b), 0)
            port2 = self.addr.port.get((b, a), 0)
            link = net.addLink(a, b, port1=port1, port2=port2, params1=p1, params2=p2)
            for intf in (link.intf1, link.intf2):
                if intf.node.name in self.topo.switches:
                    self.interfaces.append(intf.name)
                self._shaped.append((intf, key in self.impaired))
        net.build()
        net.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        for sw in self.topo.switches:
            net.get(sw).wait_ready(deadline)
        self._configure_hosts()
        for intf, impaired in self._shaped:
            self._queue_and_impair(intf, impaired)
        self._start_hold_lines()
        for host in self.topo.workers:
            self._egress(host, [])
        if self.cluster is not None:  # where each node runs and which tunnel each link got
            print("\n".join(self.cluster.describe()), flush=True)

    def _claim_here(self) -> None:
        """This machine's claims on the switch names (a cluster run claims on each server)."""
        try:
            removed = self.claims.acquire()
        except ClaimError as e:
            raise NetworkError(str(e)) from None
        if removed:
            print(f"emulation: removed {len(removed)} interfaces an emulation that died left "
                  f"behind: {', '.join(removed)}", file=sys.stderr)

    def _queue_and_impair(self, intf, impaired: bool) -> None:
        """A short FIFO under the htb class, and on an impaired link's ends the egress rules
        of emulation/network/link_impair.py (``loss``, ``dup``, ``reorder`` percent each way)."""
        if intf.node.name in self.topo.workers:
            out = "Q-OK"  # a worker's egress is built by _egress, with its pacing classes
        else:
            out = intf.cmd(f"tc qdisc add dev {intf.name} parent 5:1 handle 10: pfifo "
                           f"limit {self.queue_packets} && echo Q-OK")
        if "Q-OK" not in out:
            raise NetworkError(f"interface {intf.name}: queue setup failed: {out.strip()}")
        if not self.impair.active or not impaired:
            return
        if self.impair.reorder:
            self._hold_veth(intf)
        table = impair_table(intf.name)
        rules = self.out_dir / f".{table}.nft"
        rules.write_text(egress_rules(table, intf.name, self.impair))
        out = intf.cmd(f"nft -f {rules} && echo L-OK")
        rules.unlink()
        if "L-OK" not in out:
            raise NetworkError(f"interface {intf.name}: impairment rules failed (needs "
                               f"nftables and a kernel with netdev egress hooks, >= 5.16): "
                               f"{out.strip()}")
        if intf.node.name in self.topo.switches:
            self._nft_tables.append(table)

    def _hold_veth(self, intf) -> None:
        """The veth pair ``--reorder`` steals frames to, beside ``intf`` in its namespace; a
        host's interface sends frames, not GSO super-packets, so each can be sent again."""
        try:
            hold, peer = hold_names(intf.name)
        except ImpairError as exc:
            raise NetworkError(str(exc)) from None
        mtu = intf.cmd(f"cat /sys/class/net/{intf.name}/mtu").strip()
        gso = "" if intf.node.name in self.topo.switches else \
            f"ethtool -K {intf.name} gso off tso off >/dev/null && "
        out = intf.cmd(f"ip link add {hold} mtu {mtu} type veth peer name {peer} mtu {mtu} && "
                       f"sysctl -qw net.ipv6.conf.{hold}.disable_ipv6=1 "
                       f"net.ipv6.conf.{peer}.disable_ipv6=1 && ip link set {hold} up && "
                       f"ip link set {peer} up && {gso}echo H-OK")
        if intf.node.name in self.topo.switches:
            self._hold_devices.append(hold)
        if "H-OK" not in out:
            raise NetworkError(f"interface {intf.name}: hold veth {hold} failed: {out.strip()}")
        self._holds.setdefault(intf.node.name, []).append((peer, intf.name))

    def _start_hold_lines(self) -> None:
        """One emulation/network/hold_line.py per namespace with held frames (every switch's ports
        share the root namespace), ready before any traffic."""
        assert self.net is not None
        switches = [pair for sw in self.topo.switches for pair in self._holds.get(sw, [])]
        groups = [(h, self._holds[h]) for h in self.topo.workers + self.topo.pss
                  if h in self._holds]
        if switches:
            groups.append((self.topo.switches[0], switches))
        started = []
        for node, pairs in groups:
            log = self.out_dir / f"hold_line-{node}.log"
            cmd = [sys.executable, "-m", "emulation.network.hold_line",
                   "--delay-ms", f"{self.impair.delay_ms:g}", *(f"{p}={i}" for p, i in pairs)]
            with log.open("w") as fh:
                proc = self.net.get(node).popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                                env=child_env())
            self._hold_procs.append(proc)
            started.append((node, proc, log))
        deadline = time.monotonic() + START_TIMEOUT_S
        for node, proc, log in started:
            while "ready" not in log.read_text():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise NetworkError(f"hold line of {node} did not start: "
                                       f"{log.read_text().strip() or 'no output'}")
                time.sleep(0.05)

    def _configure_hosts(self) -> None:
        """No IPv6, static ARP for every address a host sends to, and checksums computed by
        the host's kernel: a veth leaves TCP checksums to "offload" (CHECKSUM_PARTIAL), and a
        switch that reads frames from a raw socket forwards them unfinished, so the receiver
        drops every TCP segment (UDP INA packets carry checksum 0 and never noticed)."""
        assert self.net is not None
        hosts = self.topo.workers + self.topo.pss
        for host in hosts:
            node = self.net.get(host)
            lines = [f"neigh replace {self.addr.ip[p]} lladdr {self.addr.mac[p]} "
                     f"dev {host}-eth0 nud permanent" for p in hosts if p != host]
            mtu = self._tunnel_mtu()
            # frames that cross a tunnel between servers must fit its MTU
            mtu_cmd = f"ip link set dev {host}-eth0 mtu {mtu}; " if mtu else ""
            out = node.cmd(f"sysctl -qw net.ipv6.conf.all.disable_ipv6=1; {mtu_cmd}"
                           f"ethtool -K {host}-eth0 tx off >/dev/null && echo TX-OK")
            if "TX-OK" not in out:
                raise NetworkError(f"host '{host}': turning checksum offload off failed "
                                   f"(needs ethtool): {out.strip()}")
            self._ip_batch(host, lines, "static ARP")

    def _egress(self, host: str, streams: list[Stream], burst_bytes: int = MTU_QUANTUM) -> None:
        """(Re)build a worker's egress: its shaped link and one pacing class per stream
        (emulation/network/host_pacing.py); the FIFOs hold ``queue_packets`` like every link's."""
        assert self.net is not None
        dev = f"{host}-eth0"
        lines = egress_tree(dev, self.link_mbps(host, self.addr.tor[host]) * 1e6,
                            self.queue_packets, streams, burst_bytes)
        batch = self.out_dir / f".{host}.tc"
        batch.write_text("\n".join(lines) + "\n")
        out = self.net.get(host).cmd(f"tc qdisc del dev {dev} root 2>/dev/null; "
                                     f"tc -batch {batch} && echo TC-OK")
        batch.unlink()
        if "TC-OK" not in out:
            raise NetworkError(f"host '{host}': egress queue setup failed: {out.strip()}")

    def pace(self, streams: dict[str, list[Stream]], burst_bytes: int = MTU_QUANTUM) -> None:
        """Kernel pacing of the workers' INA streams: each worker's egress gets one class per
        stream in ``streams[worker]`` (a worker not named: none, its link shaping only), with
        a bucket of ``burst_bytes`` (one frame: no burst)."""
        for host in self.topo.workers:
            self._egress(host, streams.get(host, []), burst_bytes)

    def paced_counts(self, streams: dict[str, list[Stream]]) -> dict[str, int]:
        """What the workers' stream classes carried since ``pace`` (``tc -s class show``),
        summed: bytes, packets, dropped, classes."""
        assert self.net is not None
        total = {"bytes": 0, "packets": 0, "dropped": 0, "classes": 0}
        for host, mine in streams.items():
            out = self.net.get(host).cmd(f"tc -s class show dev {host}-eth0")
            for k, v in stream_counts(out, len(mine)).items():
                total[k] += v
        return total
    def _tunnel_mtu(self) -> int | None:
        """The smallest MTU of the run's tunnels between servers (None: none below 1500)."""
        if self.cluster is None or self.cluster.tunnels is None:
            return None
        mtu = self.cluster.tunnels.mtu
        return mtu if mtu is not None and mtu < 1500 else None

    def _ip_batch(self, host: str, lines: list[str], what: str) -> None:
        """Run ``ip`` commands in a host's namespace at once; NetworkError naming ``what``."""
        assert self.net is not None
        batch = self.out_dir / f".{host}.ip"
        batch.write_text("\n".join(lines) + "\n")
        out = self.net.get(host).cmd(f"ip -batch {batch} && echo IP-OK")
        batch.unlink()
        if "IP-OK" not in out:
            raise NetworkError(f"host '{host}': {what} setup failed: {out.strip()}")

    def prepare_versions(self) -> None:
        """What hosts need to follow a service's plan versions (control_plane/deploy/
        versions.py): every PS also answers on its bank-B alias, and every host has static
        ARP for the PSs' aliases and for the result address of every lane."""
        from control_plane.deploy.versions import BANKS, MAX_JOBS, Lane, ps_address

        assert self.net is not None
        results = {self.addr.result_addr(Lane(slot, bank).wire_job)
                   for slot in range(MAX_JOBS) for bank in range(len(BANKS))}
        aliases = {ps: ps_address(self.addr, ps, 1) for ps in self.topo.pss}
        for host in self.topo.workers + self.topo.pss:
            tor = self.addr.mac[self.addr.tor[host]]
            lines = [f"neigh replace {ip} lladdr {self.addr.mac[ps]} dev {host}-eth0 "
                     f"nud permanent" for ps, ip in aliases.items() if ps != host]
            lines += [f"neigh replace {ip} lladdr {tor} dev {host}-eth0 nud permanent"
                      for ip in sorted(results)]
            if host in aliases:
                lines.append(f"addr add {aliases[host]}/32 dev {host}-eth0")
            self._ip_batch(host, lines, "plan-version addresses")

    def set_result_arp(self, result_addr: str) -> None:
        """Static ARP of a job's result address (to the ToR switch) on every host."""
        assert self.net is not None
        for host in self.topo.workers + self.topo.pss:
            mac = self.addr.mac[self.addr.tor[host]]
            self.net.get(host).cmd(f"ip neigh replace {result_addr} lladdr {mac} "
                                   f"dev {host}-eth0 nud permanent")

    def popen(self, host: str, cmd: list[str], env: dict[str, str] | None = None,
              **kwargs) -> subprocess.Popen:
        """Start a process inside a host's namespace (``env``: added to the project's
        environment); stopped with the network."""
        assert self.net is not None
        env = child_env(PYTHONUNBUFFERED="1", **(env or {}))
        node = self.net.get(host)
        module = forked_module(cmd)
        if self.cluster is not None:
            proc = self.cluster.popen(node, cmd, env, **kwargs)
        elif self.forks is not None and module is not None:
            # forked into the host's namespaces (its shell's), a session leader like mnexec's
            proc = self.forks.spawn(module, cmd[3:], env, node.pid, **kwargs)
        else:
            # mnexec -d (Mininet's popen) makes the process a session leader: killpg reaches it
            proc = node.popen(cmd, env=env, **kwargs)
        self.procs.append(proc)
        return proc

    def stop_processes(self) -> None:
        if self.cluster is not None:
            self.cluster.terminate(self.procs)
        for proc in self.procs:
            try:
                stop_process(proc)
            except ForkServerError:  # the server died, and its children with it
                pass
        self.procs.clear()

    def stop(self) -> None:
        """Stop everything; safe to call twice and after a partial start."""
        try:
            self.stop_processes()
            self._stop_hold_lines()  # before Mininet: each keeps its host's namespace alive
            if self.net is not None:
                net, self.net = self.net, None
                if self.cluster is not None:
                    self.cluster.terminate([sw.switch.proc for sw in net.switches
                                            if getattr(sw, "switch", None) is not None])
                for sw in net.switches:  # processes first, even if Mininet's stop fails
                    if getattr(sw, "switch", None) is not None:
                        sw.switch.stop()
                net.stop()
        finally:
            if self.cluster is not None:
                self.cluster.remove_interfaces()
                self.cluster.stop()
            if self.forks is not None:
                self.forks.close()
            if self.farm is not None:
                self.farm.close()
            self._stop_hold_lines()
            for table in self._nft_tables:
                subprocess.run(["nft", "delete", "table", "netdev", table], capture_output=True,
                               timeout=10)
            self._nft_tables.clear()
            for name in self._hold_devices:  # a veth goes with its peer
                if Path(f"/sys/class/net/{name}").exists():
                    subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=10)
            self._hold_devices.clear()
            for name in self.interfaces if self.cluster is None else ():  # else on servers
                if Path(f"/sys/class/net/{name}").exists():
                    subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=10)
            self.claims.release()
            for sig, handler in self._old_handlers.items():
                signal.signal(sig, handler)
            self._old_handlers.clear()

    def impairment_counts(self) -> dict[str, int]:
        """Frames the impaired links' rules dropped, held back and duplicated so far, both
        ends of every impaired link together (their nftables counters)."""
        total = {"dropped": 0, "held": 0, "duplicated": 0}
        if self.net is None or not self.impair.active:
            return total
        for intf, impaired in self._shaped:
            if not impaired:
                continue
            out = intf.cmd(f"nft -j list table netdev {impair_table(intf.name)}")
            try:
                counts = rule_counts(out)
            except ValueError:
                raise NetworkError(f"interface {intf.name}: its impairment counters did not "
                                   f"read: {out.strip()[:200]}") from None
            for key, n in counts.items():
                total[key] += n
        return total

    def _stop_hold_lines(self) -> None:
        for proc in self._hold_procs:
            stop_process(proc)
        self._hold_procs.clear()

    # -- measurement hooks -----------------------------------------------------------------------
    def metrics_address(self, node: str) -> str | None:
        """Where ``node`` (a host, or an embedded switch) serves /metrics; None when metrics
        are off, or for a switch of another target (read over P4Runtime instead)."""
        if self.metrics_dir is None or (node in self.topo.switches
                                        and self.target != "embedded"):
            return None
        return socket_address(self.metrics_dir, node)

    def set_link(self, a: str, b: str, up: bool) -> None:
        """Take link a-b down or up again as a pulled cable does: the switch ends of it go
        administratively down (a host's end sees its carrier go), never a host's end, whose
        kernel would flush its static ARP entries and routes on going down, so it would not
        come back with the link (Mininet's ``configLinkStatus`` downs both ends)."""
        if self.cluster is not None:
            raise NetworkError("a link's status: the switch interfaces are on other servers; "
                               "not offered with --cluster")
        if (a, b) not in self.topo.links:
            raise NetworkError(f"link {a}-{b}: not a link of the topology")
        ends = [f"{sw}-eth{self.addr.port[(sw, peer)]}" for sw, peer in ((a, b), (b, a))
                if (sw, peer) in self.addr.port]
        for name in ends:
            subprocess.run(["ip", "link", "set", "dev", name, "up" if up else "down"],
                           check=True, capture_output=True, timeout=10)

    def switch_ports(self, switch: str) -> dict[int, str]:
        """Port number -> interface of ``switch``."""
        return {p: f"{sw}-eth{p}" for (sw, _), p in self.addr.port.items() if sw == switch}

    def switch_pids(self) -> list[int]:
        """Every switch process (and the farm that forked them): what the switches cost."""
        pids = [] if self.farm is None or self.farm.pid is None else [self.farm.pid]
        if self.net is not None and self.cluster is None:  # else on other servers
            pids += [sw.switch.proc.pid for sw in self.net.switches
                     if getattr(sw, "switch", None) is not None and sw.switch.proc is not None]
        return pids

    def host_pids(self) -> list[int]:
        """The hosts' processes started with ``popen`` (PSs, workers) that still run, and
        the fork server the workers share (its PSS is their shared pages' other share); none
        here when they run on other servers."""
        if self.cluster is not None:
            return []
        pids = [] if self.forks is None or self.forks.pid is None else [self.forks.pid]
        for p in list(self.procs):
            try:
                if p.poll() is None:
                    pids.append(p.pid)
            except ForkServerError:
                pass
        return pids

    def tcp_retransmits(self, hosts: list[str]) -> int:
        """TCP segments the ``hosts`` retransmitted so far (their namespaces' RetransSegs):
        what a collective's bytes hold beyond its messages when its links queue for seconds."""
        return sum(retrans_segs(self.net.get(h).cmd("cat /proc/net/snmp")) for h in hosts)

    def interface_bytes(self) -> dict[str, tuple[int, int]]:
        """(tx_bytes, rx_bytes) of every switch interface (all live in the root namespace of
        this machine or of the switch's server)."""
        if self.cluster is not None:
            return self.cluster.interface_bytes(self.interfaces)
        out = {}
        for name in self.interfaces:
            base = Path(f"/sys/class/net/{name}/statistics")
            out[name] = (int((base / "tx_bytes").read_text()),
                         int((base / "rx_bytes").read_text()))
        return out


def retrans_segs(snmp: str) -> int:
    """RetransSegs from the text of /proc/net/snmp (a ``Tcp:`` header line, then its values)."""
    rows = [line.split() for line in snmp.splitlines() if line.startswith("Tcp:")]
    if len(rows) < 2 or "RetransSegs" not in rows[0]:
        raise NetworkError(f"/proc/net/snmp: expected Tcp: header and value lines with "
                           f"RetransSegs, got {snmp[:200]!r}")
    return int(rows[1][rows[0].index("RetransSegs")])


def _raise_interrupt(signum, _frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def leftovers(switches: list[str], pids: list[int]) -> list[str]:
    """What a run left behind: switch interfaces and live processes (empty when clean)."""
    found = [f"interface {name}" for sw in switches for name in interfaces_of(sw)]
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and ") Z " not in stat.read_text():
            found.append(f"process {pid}")
    return found
