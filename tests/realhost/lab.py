"""A topology as a user with real hosts and standalone switches has it, on this machine: one
network namespace per worker/PS (its NIC ``eth0`` with the deploy layer's address), one
embedded P4 switch process per switch (started like `inart switch`, no Mininet), veths as
cables (port k of a switch = its k-th neighbour, as the deploy layer numbers them).
Optionally a host also gets a management link and sshd, to be reached over SSH.
"""

from __future__ import annotations

import shutil
import subprocess
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from control_plane.deploy.addressing import assign
from control_plane.localhost import free_port
from control_plane.model.topology import Topology
from emulation.targets import SwitchProcess, SwitchSpec, get_target
from host_stack.netns import Netns, ip, root_veth

PREFIX = "irh"  # every name made here starts with it (interfaces are global)
MGMT_NET = "192.168.241"


@dataclass
class Lab:
    topology: Topology
    netns: dict[str, str] = field(default_factory=dict)  # host -> namespace
    grpc: dict[str, str] = field(default_factory=dict)  # switch -> P4Runtime address
    switches: list[SwitchProcess] = field(default_factory=list)
    ssh: dict[str, str] = field(default_factory=dict)  # host -> management address

    def inventory(self, ssh_hosts: dict[str, dict] | None = None) -> dict:
        hosts = {}
        for h, ns in self.netns.items():
            role = self.topology.nodes[h].kind
            if ssh_hosts and h in ssh_hosts:
                hosts[h] = {"role": role, "interface": "eth0", "launcher": "ssh",
                            **ssh_hosts[h]}
            else:
                hosts[h] = {"role": role, "interface": "eth0", "launcher": "netns",
                            "netns": ns}
        return {"schema": "inart.inventory/1", "topology": self.topology.name,
                "hosts": hosts,
                "switches": {sw: {"driver": "p4runtime", "target": "embedded",
                                  "address": addr} for sw, addr in self.grpc.items()}}


def build(topology: Topology, stack: ExitStack) -> Lab:
    """Namespaces, cables and running switches; all removed when ``stack`` closes."""
    addr = assign(topology)
    lab = Lab(topology)
    ifname: dict[tuple[str, int], str] = {}
    for (sw, _), port in addr.port.items():
        ifname[(sw, port)] = f"{PREFIX}{sw}p{port}"
    for h in topology.workers + topology.pss:
        ns = stack.enter_context(Netns(f"{PREFIX}{h}"))
        sw = addr.tor[h]
        ns.uplink("eth0", ifname[(sw, addr.port[(sw, h)])], f"{addr.ip[h]}/8")
        lab.netns[h] = ns.name
    for (a, b), port in sorted(addr.port.items()):
        if b in topology.switches and a < b:
            left, right = ifname[(a, port)], ifname[(b, addr.port[(b, a)])]
            root_veth(left, right)
            stack.callback(subprocess.run, ["ip", "link", "del", left], capture_output=True)
    target = get_target("embedded")
    for sw in topology.switches:
        ports = {p: ifname[(s, p)] for (s, _), p in addr.port.items() if s == sw}
        spec = SwitchSpec(addr.device_id[sw], ports, f"127.0.0.1:{free_port()}")
        lab.switches.append(stack.enter_context(SwitchProcess(target, spec)))
        lab.grpc[sw] = spec.grpc
    return lab


def sshd_unavailable() -> str | None:
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        return "sshd is not installed (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is missing"
    return None


def start_sshd(lab: Lab, host: str, tmp: Path, stack: ExitStack) -> dict:
    """sshd inside ``host``'s namespace on a management link, a throwaway key; the inventory
    fields that reach it."""
    ns = lab.netns[host]
    index = len(lab.ssh) + 1
    mine, theirs = f"{MGMT_NET}.{4 * index + 2}", f"{MGMT_NET}.{4 * index + 1}"
    root_side = f"{PREFIX}m{index}"
    ip("link", "add", root_side, "type", "veth", "peer", "name", "mgmt0", "netns", ns)
    stack.callback(subprocess.run, ["ip", "link", "del", root_side], capture_output=True)
    ip("addr", "add", f"{theirs}/30", "dev", root_side)
    ip("link", "set", root_side, "up")
    ip("-n", ns, "addr", "add", f"{mine}/30", "dev", "mgmt0")
    ip("-n", ns, "link", "set", "mgmt0", "up")
    key, hostkey = tmp / "id_ed25519", tmp / "ssh_host_ed25519_key"
    for k in (key, hostkey):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(k)],
                       check=True)
    keys = tmp / "authorized_keys"
    keys.write_text(Path(f"{key}.pub").read_text())
    keys.chmod(0o600)
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    Path("/run/sshd").mkdir(exist_ok=True)  # its privilege separation directory
    proc = subprocess.Popen(["ip", "netns", "exec", ns, sshd, "-D", "-e", "-f", "/dev/null",
                             "-o", f"ListenAddress={mine}", "-o", f"HostKey={hostkey}",
                             "-o", f"AuthorizedKeysFile={keys}", "-o", "PermitRootLogin=yes",
                             "-o", "StrictModes=no", "-o", "UsePAM=no",
                             "-o", f"PidFile={tmp / 'sshd.pid'}"],
                            stderr=open(tmp / "sshd.log", "w"))  # noqa: SIM115
    stack.callback(lambda: (proc.terminate(), proc.wait(10)))
    lab.ssh[host] = mine
    return {"address": mine, "user": "root", "key": str(key)}
