"""One emulation's servers: placement, checks, connections, per-server switch-name claims,
tunnels, remote processes and per-run clean-up (never ``mn -c``, which would end every Mininet
run on every server).

``Cluster.start`` opens one SSH control master per server that runs a node, checks every
requirement (checks.py) and claims this run's switch names on each server (their interfaces
live in that server's root namespace; emulation/network/switch_claims.py run there), and
``stop`` undoes exactly what the run made: its processes (by the pids they recorded), its
switch interfaces and tunnels, its run directory on each server, its connections.
"""

from __future__ import annotations

import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from control_plane.deploy.addressing import Addressing
from control_plane.model.topology import Topology
from control_plane.repo import REPO
from emulation.cluster.checks import (
    parse_facts,
    probe_script,
    problems_of,
    sessions_problem,
)
from emulation.cluster.nodes import ClusterError, ServerLauncher, Tunnels
from emulation.cluster.placement import crossing, describe, place
from emulation.cluster.spec import ClusterSpec
from host_stack.remote.launchers import SshProcess

VNI_SPAN = 1 << 24
PORT_RANGE = (30000, 60000)


class Cluster:
    """The servers of one emulation run; ``start`` then ``stop`` (safe after a failed start)."""

    def __init__(self, spec: ClusterSpec, topo: Topology, addr: Addressing,
                 target: str = "embedded") -> None:
        spec.check_topology(topo)
        self.spec, self.topo, self.target = spec, topo, target
        self.where = place(topo, addr, spec)
        self.token = f"{random.getrandbits(32):08x}"
        rng = random.Random(self.token)
        self.vni_base = rng.randrange(1000, VNI_SPAN - len(topo.links))
        self.port = rng.randrange(*PORT_RANGE)
        self.launchers: dict[str, ServerLauncher] = {}
        self.claims: dict[str, SshProcess] = {}
        self.tunnels: Tunnels | None = None
        self._control: Path | None = None

    # -- what goes where -------------------------------------------------------------------------
    def addressing(self, addr: Addressing) -> Addressing:
        """``addr`` with each switch's P4Runtime server on its server's address."""
        return replace(addr, grpc_host={sw: self.spec.servers[self.where[sw]].address
                                        for sw in self.topo.switches})

    def servers_used(self) -> list[str]:
        return [s for s in self.spec.servers if s in self.where.values()]

    def crossing(self) -> list[tuple[str, str]]:
        """The links whose ends run on different servers (each once)."""
        return crossing(self.topo, self.where)

    def node_params(self, node: str) -> dict:
        return {"launcher": self.launchers[self.where[node]]}

    def describe(self) -> list[str]:
        """The placement and, once built, each tunnel: what the run prints."""
        lines = [f"cluster: {len(self.servers_used())} servers, run {self.token}"]
        lines += describe(self.topo, self.where, self.spec)
        return lines + [f"  link {t}" for t in self._tunnel_texts()]

    def summary(self) -> dict[str, str]:
        """What describe() prints as flat fields of a results row (a sweep point's): the
        servers file, each server's nodes, each tunnel."""
        nodes = self.topo.switches + self.topo.workers + self.topo.pss
        placement = "; ".join(f"{s}: {' '.join(n for n in nodes if self.where[n] == s)}"
                              for s in self.servers_used())
        return {"cluster": str(self.spec.path), "placement": placement,
                "tunnels": "; ".join(self._tunnel_texts())}

    def _tunnel_texts(self) -> list[str]:
        made = self.tunnels.made if self.tunnels is not None else []
        return [f"{a}-{b}: {self.where[a]} <-> {self.where[b]} over {what} (MTU {mtu})"
                for a, b, _kind, what, mtu in made]

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self, out_dir: Path) -> None:
        """Connect, check every server (ClusterError naming each failure) and claim names."""
        self._control = Path(tempfile.mkdtemp(prefix="inart-cl-"))
        for name in self.servers_used():
            run_dir = Path(f"/tmp/inart-cluster-{self.token}-{name}")  # pids, on the server
            self.launchers[name] = ServerLauncher(self.spec.servers[name], run_dir,
                                                  self._control / name)
        problems = []
        for launcher in self.launchers.values():
            try:
                launcher.open_master()
            except (ClusterError, subprocess.TimeoutExpired) as exc:
                problems.append(str(exc))
        if problems:
            raise ClusterError("servers not ready:\n  " + "\n  ".join(problems))
        problems = self._check(out_dir)
        if problems:
            raise ClusterError("servers not ready:\n  " + "\n  ".join(problems))
        self.tunnels = Tunnels(lambda a, b: self.spec.tunnel_of(a, b), self.launchers,
                               self.vni_base, self.port)
        for name, launcher in self.launchers.items():
            self._claim(name, launcher)

    def _check(self, out_dir: Path) -> list[str]:
        import mininet.net

        marker = out_dir / f".cluster-{self.token}"
        marker.write_text(self.token)
        vxlan_servers = {self.where[n] for a, b in self.crossing() for n in (a, b)
                         if self.spec.tunnel_of(a, b) == "vxlan"}

        def check(name: str) -> list[str]:
            launcher = self.launchers[name]
            port = self.port if name in vxlan_servers else None
            script = probe_script(sys.executable, str(REPO), marker, self.token, port,
                                  self.target)
            out = launcher.shell(script, timeout=60)
            found = problems_of(name, parse_facts(out.stdout), mininet.net.VERSION,
                                sys.executable, str(REPO), marker, self.token, port)
            nodes = sum(1 for s in self.where.values() if s == name)
            problem = sessions_problem(launcher, 2 * nodes + 3)
            return found + ([problem] if problem else [])

        try:  # every server at once: the sessions check holds its sessions for seconds
            with ThreadPoolExecutor(max_workers=len(self.launchers)) as pool:
                found = list(pool.map(check, self.launchers))
        finally:
            marker.unlink(missing_ok=True)
        return [line for lines in found for line in lines]

    def _claim(self, name: str, launcher: ServerLauncher) -> None:
        """Hold this run's switch names on the server until ``stop`` (switch_claims.py)."""
        switches = [sw for sw in self.topo.switches if self.where[sw] == name]
        if not switches:
            return
        proc = launcher.popen_in(None, [sys.executable, "-m", "emulation.network.switch_claims",
                                         *switches],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        self.claims[name] = proc
        line = proc.stdout.readline().strip()
        if not line.startswith("held"):
            err = proc.stderr.read().strip() if proc.poll() is not None else ""
            raise ClusterError(f"server '{name}': {err or line or 'switch claims failed'}")
        if line != "held":
            print(f"emulation: server {name}: {line.partition(' ')[2]}", file=sys.stderr)

    def remove_interfaces(self) -> None:
        """Delete what is left of this run's switch interfaces on every server."""
        for name, launcher in self.launchers.items():
            switches = [sw for sw in self.topo.switches if self.where[sw] == name]
            if not switches:
                continue
            globs = " ".join(f"/sys/class/net/{shlex.quote(sw)}-eth*" for sw in switches)
            try:
                launcher.shell(f"for d in {globs}; do [ -e \"$d\" ] && ip link del "
                               f"\"${{d##*/}}\"; done; true")
            except (subprocess.TimeoutExpired, OSError):
                pass  # unreachable: the next run's claims remove them

    def stop(self) -> None:
        """Stop this run's processes on every server, release its names, close connections."""
        for proc in self.claims.values():
            if proc.stdin is not None and not proc.stdin.closed:
                try:
                    proc.stdin.close()  # the holder exits on end of input
                except OSError:
                    pass

        def undo(launcher: ServerLauncher) -> None:
            launcher.stop()  # its grace period on every server at once
            launcher.cleanup()
            launcher.close_master()

        if self.launchers:
            with ThreadPoolExecutor(max_workers=len(self.launchers)) as pool:
                list(pool.map(undo, self.launchers.values()))
        self.claims.clear()
        self.launchers.clear()
        if self._control is not None:
            shutil.rmtree(self._control, ignore_errors=True)
            self._control = None

    def terminate(self, procs: list[subprocess.Popen], grace: float = 5.0) -> None:
        """SIGTERM the remote ones of ``procs`` with one SSH command per server and give them
        ``grace`` seconds to end (one command each costs a round trip per switch or worker:
        seconds for fattree:4); what still runs is left to ``stop_process``."""
        by_server: dict[ServerLauncher, list[SshProcess]] = {}
        for proc in procs:
            if isinstance(proc, SshProcess) and proc.poll() is None:
                by_server.setdefault(proc.launcher, []).append(proc)
        for launcher, mine in by_server.items():
            launcher.signal_all([p.pidfile for p in mine], "TERM")
        deadline = time.monotonic() + grace
        for proc in (p for mine in by_server.values() for p in mine):
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass

    # -- running things --------------------------------------------------------------------------
    def popen(self, node, cmd: list[str], env: dict[str, str] | None = None,
              **kwargs) -> subprocess.Popen:
        """Start ``cmd`` in a node's namespaces on its server."""
        return node.launcher.popen_in(node.pid, cmd, env, **kwargs)

    def interface_bytes(self, names: list[str]) -> dict[str, tuple[int, int]]:
        """(tx_bytes, rx_bytes) of switch interfaces on their servers (/proc/net/dev)."""
        out: dict[str, tuple[int, int]] = {}
        for launcher in self.launchers.values():
            text = launcher.shell("cat /proc/net/dev").stdout
            for line in text.splitlines():
                dev, colon, rest = line.partition(":")
                if colon and dev.strip() in names:
                    f = rest.split()
                    out[dev.strip()] = (int(f[8]), int(f[0]))
        missing = [n for n in names if n not in out]
        if missing:
            raise ClusterError(f"interfaces {', '.join(missing)}: not found on any server")
        return out
