"""What every server of a cluster run must have, checked before any node starts; every failure
of every server is named, so one run lists them all.

A server needs: key-based SSH (BatchMode: no prompt), root or passwordless sudo, Mininet's
``mnexec`` and the same Mininet version as this machine, this checkout and this interpreter at
the same paths (its python imports inart from there), this run's output directory at the same
path and shared (the switches' logs and the job's plan and address files are read and written
there), VXLAN in its kernel when a VXLAN tunnel ends there, the switch target's binary, and an
sshd whose ``MaxSessions`` lets every node shell and process of the server share one connection
(sshd's default, 10, is too few past a handful of nodes: sessions beyond it fall back to
connections of their own, which sshd's MaxStartups drops when many start at once).
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from emulation.cluster.nodes import ServerLauncher

SESSION_HOLD_S = 3


def probe_script(python: str, repo: str, marker: Path, token: str, vxlan_port: int | None,
                 target: str) -> str:
    """A shell script printing ``key=value`` lines about the server it runs on."""
    q = shlex.quote
    lines = [
        "echo uid=$(id -u)",
        "echo mnexec=$(command -v mnexec || echo missing)",
        f"[ -x {q(python)} ] && echo python=ok || echo python=missing",
        f"[ -f {q(repo)}/emulation/network/mininet_net.py ] && echo repo=ok || echo repo=missing",
        f"cd {q(repo)} 2>/dev/null && echo mininet=$(PYTHONPATH={q(repo)} {q(python)} -c "
        f"'import mininet.net, emulation.network.mininet_net; print(mininet.net.VERSION)' "
        f"2>&1 | tail -1)",
        f"echo marker=$(cat {q(str(marker))} 2>/dev/null || echo missing)",
    ]
    if vxlan_port is not None:
        dev = f"ivxp{token[:8]}"
        lines += [f"ip link add {dev} type vxlan id 1 dstport {vxlan_port} local 127.0.0.1 "
                  f">/dev/null 2>&1 && ip link del {dev} && echo vxlan=ok || echo vxlan=missing",
                  f"[ -z \"$(ss -Hlun sport = :{vxlan_port})\" ] && echo port=free "
                  f"|| echo port=busy"]
    if target == "bmv2":
        lines.append("echo bmv2=$(command -v simple_switch_grpc || echo missing)")
    return "\n".join(lines)


def problems_of(server: str, facts: dict[str, str], want_mininet: str, python: str, repo: str,
                marker: Path, token: str, vxlan_port: int | None) -> list[str]:
    """Each unmet requirement of one server, as a line naming the server and the fix."""
    out = []
    s = f"server '{server}'"
    if facts.get("uid") != "0":
        out.append(f"{s}: commands do not run as root (uid {facts.get('uid')!r}): log in as "
                   f"root or give the user passwordless sudo")
    if facts.get("mnexec") in (None, "missing"):
        out.append(f"{s}: mnexec not found: install Mininet (Debian: apt-get install mininet)")
    if facts.get("python") != "ok":
        out.append(f"{s}: {python} missing: the same interpreter (virtual environment) "
                   f"must be at the same path on every server")
    if facts.get("repo") != "ok":
        out.append(f"{s}: no inart checkout at {repo}: the same checkout must be at the same "
                   f"path on every server")
    elif facts.get("mininet") != want_mininet:
        out.append(f"{s}: Mininet {facts.get('mininet')!r} (importing mininet and inart with "
                   f"{python}); expected Mininet {want_mininet} as on this machine")
    if facts.get("marker") != token:
        out.append(f"{s}: the output directory {marker.parent} is not shared with this "
                   f"machine at the same path (switch logs, plan and address files live "
                   f"there): mount it there (e.g. NFS) or choose --out on a shared path")
    if vxlan_port is not None:
        if facts.get("vxlan") != "ok":
            out.append(f"{s}: cannot create VXLAN devices (kernel module vxlan missing?); "
                       f"use tunnel: ssh for its links")
        if facts.get("port") != "free":
            out.append(f"{s}: UDP port {vxlan_port} (this run's VXLAN port) is in use")
    if facts.get("bmv2") == "missing":
        out.append(f"{s}: target bmv2: simple_switch_grpc not found")
    return out


def parse_facts(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def sessions_problem(launcher: ServerLauncher, need: int) -> str | None:
    """Open ``need`` sessions at once over the server's connection; None if all opened."""
    procs = [subprocess.Popen([*launcher.ssh(), f"echo ok; sleep {SESSION_HOLD_S}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL) for _ in range(need)]
    opened = 0
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        # a session the master refuses falls back to a connection of its own: not shared
        opened += out.strip() == b"ok" and b"refused" not in err
    if opened < need:
        return (f"server '{launcher.server.name}': only {opened} of the {need} SSH sessions "
                f"its nodes need opened at once over one connection: raise MaxSessions in its "
                f"sshd_config to at least {need} (default 10)")
    return None
