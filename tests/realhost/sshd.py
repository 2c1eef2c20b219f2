"""sshd inside a lab host's namespace (realhosts/lab.py), so a test reaches that host over SSH
as `inart run` reaches a real machine."""

from __future__ import annotations

import shutil
import subprocess
from contextlib import ExitStack
from pathlib import Path

from host_stack.netns import ip
from realhosts.lab import Lab

MGMT_NET = "192.168.241"


def sshd_unavailable() -> str | None:
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        return "sshd is not installed (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is missing"
    return None


def sshd_files(tmp: Path) -> tuple[Path, Path, Path, str]:
    """Throwaway client and host keys under ``tmp``, the client's key authorized, and the sshd
    binary (its privilege separation directory made): (key, host key, authorized_keys, sshd)."""
    key, hostkey = tmp / "id_ed25519", tmp / "ssh_host_ed25519_key"
    for k in (key, hostkey):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(k)],
                       check=True)
    keys = tmp / "authorized_keys"
    keys.write_text(Path(f"{key}.pub").read_text())
    keys.chmod(0o600)
    Path("/run/sshd").mkdir(exist_ok=True)
    return key, hostkey, keys, shutil.which("sshd") or "/usr/sbin/sshd"


def start_sshd(lab: Lab, host: str, tmp: Path, stack: ExitStack, index: int = 1) -> dict:
    """sshd inside ``host``'s namespace on a management link, a throwaway key; the inventory
    fields that reach it."""
    ns = lab.netns[host]
    mine, theirs = f"{MGMT_NET}.{4 * index + 2}", f"{MGMT_NET}.{4 * index + 1}"
    root_side = f"{lab.name}m{index}"
    ip("link", "add", root_side, "type", "veth", "peer", "name", "mgmt0", "netns", ns)
    stack.callback(subprocess.run, ["ip", "link", "del", root_side], capture_output=True)
    ip("addr", "add", f"{theirs}/30", "dev", root_side)
    ip("link", "set", root_side, "up")
    ip("-n", ns, "addr", "add", f"{mine}/30", "dev", "mgmt0")
    ip("-n", ns, "link", "set", "mgmt0", "up")
    key, hostkey, keys, sshd = sshd_files(tmp)
    proc = subprocess.Popen(["ip", "netns", "exec", ns, sshd, "-D", "-e", "-f", "/dev/null",
                             "-o", f"ListenAddress={mine}", "-o", f"HostKey={hostkey}",
                             "-o", f"AuthorizedKeysFile={keys}", "-o", "PermitRootLogin=yes",
                             "-o", "StrictModes=no", "-o", "UsePAM=no",
                             "-o", f"PidFile={tmp / 'sshd.pid'}"],
                            stderr=open(tmp / "sshd.log", "w"))  # noqa: SIM115
    stack.callback(lambda: (proc.terminate(), proc.wait(10)))
    return {"address": mine, "user": "root", "key": str(key)}
