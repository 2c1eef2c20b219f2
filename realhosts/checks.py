"""Before anything is installed: is every host reachable, can its python import inart's host
stack, and does its data-plane interface exist with the address the deploy layer gives it?

One probe per host (a short script run by the host's own interpreter in its checkout); every
problem of every host is collected, so one run names them all.  The interfaces' MAC addresses
come back too: the switches rewrite each packet's destination MAC to the next hop's, so the
entries must name the hosts' real NICs.
"""

from __future__ import annotations

import json
import subprocess

from control_plane.deploy.addressing import Addressing
from host_stack.remote.launchers import Fleet
from realhosts.inventory import Inventory

PROBE = r"""
import json, subprocess, sys
out = {"python": sys.version.split()[0]}
try:
    import host_stack.ina.ps, host_stack.train.worker  # noqa: F401
    out["inart"] = True
except Exception as exc:
    out["inart"] = f"{type(exc).__name__}: {exc}"
dev = sys.argv[1]
try:
    out["mac"] = open(f"/sys/class/net/{dev}/address").read().strip()
    r = subprocess.run(["ip", "-j", "-4", "addr", "show", "dev", dev], capture_output=True,
                       text=True)
    out["ipv4"] = [a["local"] for i in json.loads(r.stdout or "[]")
                   for a in i.get("addr_info", [])]
except OSError:
    out["mac"] = None
print(json.dumps(out))
"""


class HostCheckError(RuntimeError):
    """One or more hosts are not ready; the message has one line per problem."""


def probe(fleet: Fleet, host: str) -> dict | str:
    """The probe's answer, or why there is none."""
    launcher = fleet[host]
    spec = launcher.spec
    try:
        proc = launcher.run([spec.python, "-c", PROBE, spec.interface])
    except subprocess.TimeoutExpired:
        return "did not answer within 30 s"
    except OSError as exc:
        return f"cannot start the launcher ({exc})"
    err = proc.stderr.decode(errors="replace").strip().splitlines()
    if proc.returncode != 0:
        why = err[-1] if err else f"exit status {proc.returncode}"
        if spec.ssh is not None and proc.returncode == 255:
            return f"not reachable over SSH: {why}"
        return f"running {spec.python} in {spec.repo} failed: {why}"
    try:
        return json.loads(proc.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"the probe printed no answer ({proc.stdout[-200:]!r})"


def check_hosts(fleet: Fleet, inventory: Inventory, addressing: Addressing) -> dict[str, str]:
    """Every host's interface MAC; HostCheckError listing every problem of every host."""
    problems, macs = [], {}
    for name, spec in inventory.hosts.items():
        got = probe(fleet, name)
        who = spec.describe()
        if isinstance(got, str):
            problems.append(f"{who}: {got}")
            continue
        if got.get("inart") is not True:
            problems.append(f"{who}: {spec.python} (Python {got.get('python')}) cannot import "
                            f"inart's host stack from {spec.repo}: {got.get('inart')}")
        want = addressing.ip[name]
        if not got.get("mac"):
            problems.append(f"{who}: interface {spec.interface!r} does not exist")
        elif want not in got.get("ipv4", []):
            problems.append(f"{who}: interface {spec.interface!r} has IPv4 "
                            f"{', '.join(got.get('ipv4', [])) or 'none'}; expected {want} "
                            f"(the deploy layer's address of {spec.role} '{name}'; "
                            f"`inart install --dry-run` lists every host's)")
        else:
            macs[name] = got["mac"]
    if problems:
        raise HostCheckError("hosts not ready:\n  " + "\n  ".join(problems))
    return macs
