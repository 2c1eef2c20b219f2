"""Mininet nodes and links on other servers: Mininet's cluster edition
(mininet.examples.cluster: RemoteMixin, RemoteLink) driven through one SSH connection per server.

``ServerLauncher`` is the realhosts SSH launcher for a server: one multiplexed connection (an
SSH control master, so sshd's ``MaxSessions`` bounds the nodes a server can hold), the job's and
the switches' processes started in a node's namespaces (``mnexec -a``) with their pids recorded
on the server, so stopping them signals the remote process, never only the local ``ssh``.

``ClusterMixin`` makes a Mininet node remote the way RemoteMixin does (its shell is ``ssh -tt``
to the server), through that launcher's connection and options, with ``sudo -n`` only for a
user other than root.  Mininet's own cleanup callback (``ClusterCleanup``: ``mn -c`` on every
server) is never registered: clean-up stays per run.

``TunnelLink`` is RemoteLink with tc shaping (TCIntf) whose tunnels between servers are VXLAN
devices (in-kernel; Mininet's own GRE needs gretap, which some kernels lack) or Mininet's SSH
Ethernet tunnels (``tunnel: ssh``: user space, slower), chosen per link by the servers file.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from control_plane.repo import REPO
from emulation.cluster.spec import Server
from host_stack.remote.hosts import HostSpec, SshSpec
from host_stack.remote.launchers import SshLauncher, SshProcess


class ClusterError(RuntimeError):
    """A server, node or tunnel of a cluster run failed; the message names it."""


class ServerLauncher(SshLauncher):
    """Commands and processes on one server, over one SSH control master."""

    def __init__(self, server: Server, run_dir: Path, control: Path) -> None:
        self.server = server
        self.control = control
        ssh = server.ssh
        spec = SshSpec(ssh.address, ssh.user, ssh.port, ssh.key,
                       (*ssh.options, f"ControlPath={control}", "ControlMaster=no"))
        super().__init__(HostSpec(server.name, "server", "-", "ssh", sys.executable, str(REPO),
                                  spec), run_dir)

    @property
    def sudo(self) -> list[str]:
        """What runs a command as root on the server (nothing when we log in as root)."""
        return [] if self.server.ssh.user == "root" else ["sudo", "-n"]

    def ssh_tty(self) -> list[str]:
        """The ssh command with a terminal (Mininet's node shells read from a pty)."""
        return ["-tt" if a == "-T" else a for a in self.ssh()]

    def remote(self, cmd, env=None, in_repo=True, pidfile=None) -> str:
        line = super().remote(cmd, env, in_repo, pidfile)
        return f"sudo -n sh -c {shlex.quote(line)}" if self.sudo else line

    def open_master(self) -> None:
        """The control master every later ssh of this run shares; ClusterError if SSH fails."""
        *options, dest, _ = self.ssh()
        options = ["ControlMaster=yes" if a == "ControlMaster=no" else a
                   for a in options if a != "-T"]
        log = self.control.with_suffix(".log")
        with open(log, "wb") as err:  # ssh -f keeps its stderr: a pipe would never close
            # not -N: a master started with -N refuses its clients' sessions (OpenSSH 9)
            proc = subprocess.run([*options, "-o", "ControlPersist=yes", dest, "true"],
                                  stdout=subprocess.DEVNULL, stderr=err,
                                  stdin=subprocess.DEVNULL, timeout=40)
        if proc.returncode != 0:
            raise ClusterError(f"server '{self.server.name}' ({self.server.ssh.user}@"
                               f"{self.server.address}:{self.server.ssh.port}): key-based SSH "
                               f"failed: {log.read_text(errors='replace').strip()}")

    def close_master(self) -> None:
        subprocess.run(["ssh", "-o", f"ControlPath={self.control}", "-O", "exit",
                        self.server.address], capture_output=True, timeout=20)

    def shell(self, script: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """A short root shell script on the server (text output)."""
        proc = self.run(["sh", "-c", script], timeout=timeout, in_repo=False)
        return subprocess.CompletedProcess(proc.args, proc.returncode,
                                           proc.stdout.decode(errors="replace"),
                                           proc.stderr.decode(errors="replace"))

    def popen_in(self, ns_pid: int | None, cmd: list[str], env: dict[str, str] | None = None,
                 **kwargs) -> SshProcess:
        """Start ``cmd`` in the namespaces of the server's process ``ns_pid`` (a node's shell;
        None: the server's own); ``env``: only what differs from this process's environment
        travels."""
        sent = {k: v for k, v in (env or {}).items() if os.environ.get(k) != v}
        sent.setdefault("PYTHONUNBUFFERED", "1")
        pidfile = str(self.pid_dir / f"{len(self.procs)}.pid")
        attach = ["mnexec", "-a", str(ns_pid)] if ns_pid is not None else []
        line = self.remote([*attach, *self.argv(cmd)], sent,
                           pidfile=pidfile)
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        return self._track(SshProcess(self, pidfile, [*self.ssh(), line],
                                      start_new_session=True, **kwargs))


def cluster_mixin():
    """The mix-in that puts a Mininet node on a server (import-time Mininet stays optional)."""
    from mininet.examples.cluster import RemoteMixin
    from mininet.node import Node

    class ClusterMixin(RemoteMixin):
        """RemoteMixin over a ServerLauncher's connection (params: ``launcher``)."""

        def __init__(self, name: str, launcher: ServerLauncher, **kwargs) -> None:
            self.launcher = launcher
            server = launcher.server
            self.server, self.serverIP, self.user = server.name, server.address, server.ssh.user
            self.controlPath, self.splitInit, self.isRemote = str(launcher.control), False, True
            self.dest = f"{server.ssh.user}@{server.address}"
            self.sshcmd = launcher.ssh_tty()
            self.shell, self.pid = None, None
            # RemoteMixin.__init__ would register `mn -c` on every server as a cleanup
            super(RemoteMixin, self).__init__(name, **kwargs)

        def _popen(self, cmd, sudo: bool = True, tt: bool = True, **params):
            if isinstance(cmd, str):
                cmd = cmd.split()
            ssh = self.launcher.ssh_tty() if tt else self.launcher.ssh()
            line = shlex.join([*(self.launcher.sudo if sudo else []), *cmd])
            params.update(preexec_fn=os.setpgrp)
            return Node._popen(self, [*ssh, line], **params)

    return ClusterMixin


def host_class():
    from mininet.node import Host

    class ClusterHost(cluster_mixin(), Host):
        """A Mininet host (its own network namespace) on a server."""

    return ClusterHost


class Tunnels:
    """The tunnels of one run between servers: VXLAN devices with this run's VNIs and UDP port
    (or SSH Ethernet tunnels), what each link got, and their MTU (hosts get the smallest)."""

    def __init__(self, kind_of, launchers: dict[str, ServerLauncher], vni_base: int,
                 port: int) -> None:
        self.kind_of = kind_of  # (node a, node b) -> "vxlan" | "ssh"
        self.launchers = launchers
        self.vni_base, self.port = vni_base, port
        self.made: list[tuple[str, str, str, str, int]] = []  # a, b, kind, what, mtu
        self._underlay: dict[tuple[str, str], str] = {}

    @property
    def mtu(self) -> int | None:
        return min((m for *_, m in self.made), default=None)

    def underlay(self, server: Server, peer: Server) -> str:
        """The interface ``server`` reaches ``peer``'s tunnel address through."""
        key = (server.name, peer.name)
        if key not in self._underlay:
            out = self.launchers[server.name].shell(f"ip -o route get {peer.tunnel_address}")
            words = out.stdout.split()
            if out.returncode != 0 or "dev" not in words:
                raise ClusterError(f"server '{server.name}': no route to server '{peer.name}' "
                                   f"({peer.tunnel_address}): {out.stderr.strip()}")
            self._underlay[key] = words[words.index("dev") + 1]
        return self._underlay[key]

    def make(self, node1, node2, name1: str, name2: str, mac1: str | None,
             mac2: str | None) -> None:
        kind = self.kind_of(node1.name, node2.name)
        if kind == "ssh":
            mtu = self._ssh(node1, node2, name1, name2, mac1, mac2)
            what = "SSH Ethernet tunnel"
        else:
            vni = self.vni_base + len(self.made)
            mtu = 0
            for node, name, mac, peer in ((node1, name1, mac1, node2),
                                          (node2, name2, mac2, node1)):
                mtu = self._vxlan(node, peer, name, mac, vni)
            what = f"VXLAN VNI {vni} UDP {self.port}"
        self.made.append((node1.name, node2.name, kind, what, mtu))

    def _vxlan(self, node, peer, name: str, mac: str | None, vni: int) -> int:
        me = node.launcher.server
        other = peer.launcher.server
        address = f" address {mac}" if mac else ""
        script = (f"ip link add {name}{address} type vxlan id {vni} local {me.tunnel_address} "
                  f"remote {other.tunnel_address} dstport {self.port} "
                  f"dev {self.underlay(me, other)} && ip link set {name} up && "
                  f"cat /sys/class/net/{name}/mtu")
        if node.inNamespace:  # a host's end: made in the server's namespace, then moved
            script += f" && ip link set {name} netns {node.pid}"
        out = node.launcher.shell(script)
        if out.returncode != 0 or not out.stdout.strip().isdigit():
            raise ClusterError(f"link {node.name}-{peer.name}: VXLAN device {name} on server "
                               f"'{me.name}' failed: {(out.stderr or out.stdout).strip()}")
        return int(out.stdout.strip())

    def _ssh(self, node1, node2, name1: str, name2: str, mac1: str | None,
             mac2: str | None) -> int:
        """An SSH Ethernet tunnel (``ssh -w``, as Mininet's RemoteSSHLink) from node1's server
        to node2's: tap devices at both ends, renamed to the link's interfaces.  The ssh client
        runs on node1's server as one of the run's processes (stopped with them); node2's
        sshd needs ``PermitTunnel ethernet`` and node1's server the same key path."""
        num = self.vni_base % 50000 + 1000 + len(self.made)  # tapN: unique to this run
        tap = f"tap{num}"
        ends = ((node1, name1, mac1), (node2, name2, mac2))
        for node, _, _ in ends:
            # up: its carrier says when ssh has attached it
            out = node.launcher.shell(f"ip tuntap add dev {tap} mode tap && "
                                      f"ip link set {tap} up")
            if out.returncode != 0:
                raise ClusterError(f"link {node1.name}-{node2.name}: tap device {tap} on "
                                   f"server '{node.launcher.server.name}': {out.stderr.strip()}")
        far = node2.launcher
        opts, base = far.ssh()[:-2], []  # its options, less this machine's control socket
        for i, a in enumerate(opts):
            if a != "-T" and not a.startswith("Control") and not (
                    a == "-o" and opts[i + 1].startswith("Control")):
                base.append(a)
        cmd = [*base, "-N", "-o", "Tunnel=ethernet", "-o", "ExitOnForwardFailure=yes",
               "-w", f"{num}:{num}", far.ssh()[-2]]
        proc = node1.launcher.popen_in(None, cmd, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while not all(self._carrier(node, tap) for node, _, _ in ends):
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode(errors="replace").strip() \
                    if proc.poll() is not None else "no carrier within 20 s"
                raise ClusterError(f"link {node1.name}-{node2.name}: SSH tunnel from server "
                                   f"'{node1.launcher.server.name}' to "
                                   f"'{far.server.name}' failed (its sshd needs PermitTunnel "
                                   f"ethernet): {err}")
            time.sleep(0.2)
        mtu = 0
        for node, name, mac in ends:
            script = f"ip link set {tap} down && ip link set {tap} name {name}" + (
                f" address {mac}" if mac else "")
            script += f" && ip link set {name} up && cat /sys/class/net/{name}/mtu"
            if node.inNamespace:
                script += f" && ip link set {name} netns {node.pid}"
            out = node.launcher.shell(script)
            if out.returncode != 0 or not out.stdout.strip().isdigit():
                raise ClusterError(f"link {node1.name}-{node2.name}: renaming {tap} to {name} "
                                   f"on server '{node.launcher.server.name}' failed: "
                                   f"{(out.stderr or out.stdout).strip()}")
            mtu = int(out.stdout.strip())
        return mtu

    @staticmethod
    def _carrier(node, tap: str) -> bool:
        out = node.launcher.shell(f"cat /sys/class/net/{tap}/carrier 2>/dev/null || echo 0")
        return out.stdout.strip() == "1"


def tunnel_link_class(tunnels: Tunnels):
    """RemoteLink with tc-shaped interfaces whose cross-server links are ``tunnels``."""
    from mininet.examples.cluster import RemoteLink
    from mininet.link import Link, TCIntf

    class TunnelLink(RemoteLink):
        """A veth pair on one server, else a tunnel; TCIntf at both ends (as TCLink)."""

        def __init__(self, node1, node2, **kwargs) -> None:
            kwargs.setdefault("cls1", TCIntf)
            kwargs.setdefault("cls2", TCIntf)
            RemoteLink.__init__(self, node1, node2, **kwargs)

        def makeTunnel(self, node1, node2, intfname1, intfname2, addr1=None,  # noqa: N802,N803
                       addr2=None):
            tunnels.make(node1, node2, intfname1, intfname2, addr1, addr2)
            return None  # no process: stop() deletes both devices (Link.stop)

        def stop(self) -> None:
            Link.stop(self)

    return TunnelLink
