"""Servers for a cluster run on one machine: each "server" is a network namespace with its own
sshd (root, key auth), joined to the others and to the root namespace (where the controller
runs) by a bridge; the filesystem is this machine's, so checkout, interpreter and output
directory are at the same paths, as the servers file requires."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

from emulation.targets.base import port_open
from host_stack.netns import ip
from tests.realhost.sshd import sshd_files

SUBNET = "192.168.247"
NAMESPACES: dict[str, str] = {}  # server name -> its namespace, of the latest rig


def server_leftovers(server: str) -> list[str]:
    """What a run left on a rig server: interfaces besides its own, processes besides sshd."""
    ns = NAMESPACES[server]
    links = subprocess.run(["ip", "-n", ns, "-br", "link"], capture_output=True, text=True,
                           check=True).stdout.split("\n")
    found = [f"interface {line.split()[0]} on {server}" for line in links
             if line.strip() and line.split()[0].split("@")[0] not in ("lo", "eth0")]
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True,
                          check=True).stdout.split()
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "sshd" not in cmd:
            found.append(f"process {pid} ({cmd[:80]}) on {server}")
    return found


def rig_unavailable() -> str | None:
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        return "sshd is not installed (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None or shutil.which("ssh") is None:
        return "ssh or ssh-keygen is missing"
    return None


def start_servers(count: int, tmp: Path, stack: ExitStack, max_sessions: int = 100) -> dict:
    """``count`` namespace servers (sshd ``MaxSessions`` as given); the servers file document
    that reaches them (each server's namespace in ``NAMESPACES[name]``)."""
    tag = f"icr{os.getpid() % 10000}"
    bridge = f"{tag}br"
    ip("link", "add", bridge, "type", "bridge")
    stack.callback(subprocess.run, ["ip", "link", "del", bridge], capture_output=True)
    ip("addr", "add", f"{SUBNET}.1/24", "dev", bridge)
    ip("link", "set", bridge, "up")
    key, hostkey, keys, sshd = sshd_files(tmp)
    servers = {}
    for i in range(1, count + 1):
        ns, veth, address = f"{tag}s{i}", f"{tag}v{i}", f"{SUBNET}.{10 + i}"
        ip("netns", "add", ns)
        stack.callback(subprocess.run, ["ip", "netns", "del", ns], capture_output=True)
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        stack.callback(subprocess.run, ["ip", "link", "del", veth], capture_output=True)
        ip("link", "set", veth, "master", bridge, "up")
        ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        ip("-n", ns, "link", "set", "lo", "up")
        log = open(tmp / f"sshd-{i}.log", "w")  # noqa: SIM115 (owned by sshd)
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, sshd, "-D", "-e", "-f", "/dev/null",
             "-o", f"ListenAddress={address}", "-o", f"HostKey={hostkey}",
             "-o", f"AuthorizedKeysFile={keys}", "-o", "PermitRootLogin=yes",
             "-o", "StrictModes=no", "-o", "UsePAM=no", "-o", f"MaxSessions={max_sessions}",
             "-o", "PermitTunnel=ethernet", "-o", f"PidFile={tmp / f'sshd-{i}.pid'}"],
            stderr=log)
        log.close()
        stack.callback(lambda p=proc: (p.terminate(), p.wait(10)))
        servers[f"server{i}"] = {"address": address}
        NAMESPACES[f"server{i}"] = ns
    deadline = time.monotonic() + 10
    for entry in servers.values():  # sshd listens once its socket is bound
        while not port_open(f"{entry['address']}:22") and time.monotonic() < deadline:
            time.sleep(0.1)
    return {"schema": "inart.cluster/1",
            "ssh": {"user": "root", "key": str(key),
                    "options": ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"]},
            "servers": servers}
