"""A topology as a user with real hosts and standalone switches has it, on this one machine:
what `inart lab up` makes for `inart run --inventory`, and what the real-host tests run on.

One network namespace per worker and PS (its NIC ``eth0`` with the deploy layer's address,
checksum offload off), one embedded P4 switch process per switch (started like `inart switch`,
no Mininet, no program: `inart run` or `inart install` pushes it), veths as cables (port k of
a switch = its k-th neighbour, as the deploy layer numbers them).  Every name starts with the
lab's name, so two labs, or a lab and an emulation, never share one.

A lab outlives the command that made it, so it is recorded in a state file (``state_file``)
*before* each namespace or cable is made: ``down`` removes exactly what ``up`` made, also after
``up`` or the machine's user was killed half-way.  The switch processes are found by the
interfaces on their command lines, so one whose start was not yet recorded is found too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from control_plane.deploy.addressing import Addressing, assign
from control_plane.localhost import free_port
from control_plane.model.topology import Topology
from emulation.targets import SwitchProcess, SwitchSpec, TargetError, get_target
from emulation.targets.base import START_TIMEOUT_S
from host_stack.netns import Netns, can_create_veths, root_veth

NAME = "ilab"  # default lab name: the prefix of every namespace and interface it makes
STATE_DIR = Path("/tmp")
IFNAMSIZ = 15  # Linux's longest interface name
SCHEMA = "inart.lab/1"


class LabError(RuntimeError):
    """A lab could not be made or is in the way; the message says what and what to do."""


def state_file(name: str) -> Path:
    """Where the lab called ``name`` records what it made."""
    return STATE_DIR / f"inart-lab-{name}.json"


def port_interface(name: str, switch: str, port: int) -> str:
    """The root-namespace interface that is port ``port`` of ``switch`` in lab ``name``."""
    return f"{name}{switch}p{port}"


@dataclass
class Lab:
    """A lab that is up: where each host lives and where each switch answers."""

    name: str
    topology: Topology
    topology_field: str | dict  # the inventory's ``topology`` (a name, or spec + options)
    addressing: Addressing
    netns: dict[str, str] = field(default_factory=dict)  # host -> namespace
    grpc: dict[str, str] = field(default_factory=dict)  # switch -> P4Runtime address
    logs: dict[str, str] = field(default_factory=dict)  # switch -> its log file

    def inventory(self, ssh_hosts: dict[str, dict] | None = None) -> dict:
        """The inart.inventory/1 document of this lab (``ssh_hosts``: hosts reached over SSH
        instead, with these fields)."""
        hosts = {}
        for h, ns in self.netns.items():
            role = self.topology.nodes[h].kind
            if ssh_hosts and h in ssh_hosts:
                hosts[h] = {"role": role, "interface": "eth0", "launcher": "ssh",
                            **ssh_hosts[h]}
            else:
                hosts[h] = {"role": role, "interface": "eth0", "launcher": "netns",
                            "netns": ns}
        return {"schema": "inart.inventory/1", "topology": self.topology_field,
                "hosts": hosts,
                "switches": {sw: {"driver": "p4runtime", "target": "embedded", "address": addr,
                                  "device_id": self.addressing.device_id[sw]}
                             for sw, addr in self.grpc.items()}}

    def describe(self) -> list[str]:
        """What was made, one line per host and switch."""
        addr = self.addressing
        lines = []
        for h, ns in self.netns.items():
            tor = addr.tor[h]
            lines.append(f"{self.topology.nodes[h].kind:6s} {h:4s} netns {ns}, eth0 "
                         f"{addr.ip[h]}/8, cabled to {tor} port {addr.port[(tor, h)]} "
                         f"({port_interface(self.name, tor, addr.port[(tor, h)])})")
        for sw, grpc in self.grpc.items():
            ports = sorted((p, peer) for (s, peer), p in addr.port.items() if s == sw)
            lines.append(f"switch {sw:4s} embedded, device {addr.device_id[sw]}, P4Runtime "
                         f"{grpc}, ports " + ", ".join(f"{p}->{peer}" for p, peer in ports)
                         + f"; log {self.logs[sw]}")
        return lines


class LabState:
    """The state file: every namespace and interface of the lab, written before it is made."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.path = state_file(name)
        self.doc: dict = {"schema": SCHEMA, "name": name, "namespaces": [], "interfaces": [],
                          "switches": {}}

    @classmethod
    def load(cls, name: str) -> LabState | None:
        """The lab's recorded state, None if there is no state file."""
        state = cls(name)
        try:
            doc = json.loads(state.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise LabError(f"lab state {state.path}: unreadable ({exc}); remove the lab's "
                           f"namespaces ({name}*) by hand and delete the file") from None
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise LabError(f"lab state {state.path}: expected schema {SCHEMA}")
        state.doc.update(doc)
        return state

    def record(self, key: str, item: str) -> None:
        self.doc[key].append(item)
        self.save()

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.doc, indent=1))
        os.replace(tmp, self.path)

    def existing(self) -> list[str]:
        """What of the recorded lab still exists on this machine."""
        found = [f"netns {ns}" for ns in self.doc["namespaces"] if _netns_exists(ns)]
        found += [f"interface {i}" for i in self.doc["interfaces"]
                  if Path(f"/sys/class/net/{i}").exists()]
        found += [f"process {pid}" for pid in switch_pids(self.doc["interfaces"])]
        return found


def _netns_exists(name: str) -> bool:
    return Path(f"/run/netns/{name}").exists()


def switch_pids(interfaces: list[str]) -> list[int]:
    """Processes with one of ``interfaces`` as a switch port (``-i N@IFACE``) on their command
    line: the lab's switches, however far their start got."""
    wanted = set(interfaces)
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ports = {a.decode(errors="replace").partition("@")[2] for a in args if b"@" in a}
        if ports & wanted:
            pids.append(int(entry.name))
    return sorted(pids)


def check_names(name: str, topology: Topology) -> None:
    """Refuse a lab name that is not a plain word or would make too long interface names."""
    if not re.fullmatch(r"[a-z][a-z0-9]*", name):
        raise LabError(f"--name {name!r}: expected lower-case letters and digits, starting "
                       f"with a letter (it prefixes every namespace and interface)")
    addr = assign(topology)
    longest = max((port_interface(name, sw, p) for (sw, _), p in addr.port.items()), key=len)
    if len(longest) > IFNAMSIZ:
        raise LabError(f"--name {name!r}: interface {longest!r} would have {len(longest)} "
                       f"characters, Linux allows {IFNAMSIZ}: give a shorter --name")


def foreign(name: str, topology: Topology) -> list[str]:
    """The lab's namespace and interface names that exist already: ``up`` records each name
    before making it, so it must not take over one it would then remove on ``down``."""
    addr = assign(topology)
    found = [f"netns {name}{h}" for h in topology.workers + topology.pss
             if _netns_exists(f"{name}{h}")]
    return found + [f"interface {port_interface(name, sw, p)}"
                    for (sw, _), p in sorted(addr.port.items())
                    if Path(f"/sys/class/net/{port_interface(name, sw, p)}").exists()]


def unavailable() -> str | None:
    """None when a lab can be made here, else why not."""
    reason = can_create_veths() or get_target("embedded").unavailable()
    if reason:
        return reason
    if shutil.which("ethtool") is None:
        return "ethtool is missing (apt-get install ethtool): hosts need checksum offload off"
    return None


def up(topology: Topology, topology_field: str | dict, log_dir: Path,
       name: str = NAME) -> Lab:
    """Make the lab and start its switches; they run on after this returns.  On any error,
    what was made is removed again before the error is raised."""
    reason = unavailable()
    if reason:
        raise LabError(reason)
    check_names(name, topology)
    old = LabState.load(name)
    if old is not None:
        still = old.existing()
        if still:
            raise LabError(f"lab '{name}' is up ({', '.join(still[:4])}"
                           f"{', ...' if len(still) > 4 else ''}): `inart lab down"
                           f"{'' if name == NAME else ' --name ' + name}` first, or give "
                           f"another --name")
    in_the_way = foreign(name, topology)
    if in_the_way:
        raise LabError(f"lab '{name}': {', '.join(in_the_way)} already exist but this lab did "
                       f"not make them (someone else's, or left by a crashed run): remove them "
                       f"(`ip netns del`, `ip link del`) or give another --name")
    state = LabState(name)
    try:
        state.path.unlink(missing_ok=True)
        with open(state.path, "x") as f:  # two `up`s at once: one wins
            f.write(json.dumps(state.doc))
    except FileExistsError:
        raise LabError(f"lab '{name}' is being made by another process ({state.path})") from None
    try:
        return _make(state, topology, topology_field, log_dir)
    except BaseException:
        down(name)
        raise


def _make(state: LabState, topology: Topology, topology_field: str | dict,
          log_dir: Path) -> Lab:
    name = state.name
    addr = assign(topology)
    lab = Lab(name, topology, topology_field, addr)
    ifname = {(sw, port): port_interface(name, sw, port) for (sw, _), port in addr.port.items()}
    for h in topology.workers + topology.pss:
        ns, sw = Netns(f"{name}{h}"), addr.tor[h]
        peer = ifname[(sw, addr.port[(sw, h)])]
        state.record("namespaces", ns.name)
        state.record("interfaces", peer)
        ns.create()
        ns.uplink("eth0", peer, f"{addr.ip[h]}/8")
        # a veth leaves checksums to "offload", and a switch reading frames from a raw socket
        # forwards them unfinished: the receiver would drop every TCP segment
        proc = subprocess.run([*ns.exec_prefix(), "ethtool", "-K", "eth0", "tx", "off"],
                              capture_output=True, text=True, timeout=10)
        if proc.returncode != 0:
            raise LabError(f"host '{h}': turning checksum offload off failed: "
                           f"{proc.stderr.strip()}")
        lab.netns[h] = ns.name
    for (a, b), port in sorted(addr.port.items()):
        if b in topology.switches and a < b:
            left, right = ifname[(a, port)], ifname[(b, addr.port[(b, a)])]
            state.record("interfaces", left)
            state.record("interfaces", right)
            root_veth(left, right)
    log_dir.mkdir(parents=True, exist_ok=True)
    target = get_target("embedded")
    started = []
    for sw in topology.switches:
        ports = {p: ifname[(s, p)] for (s, _), p in addr.port.items() if s == sw}
        spec = SwitchSpec(addr.device_id[sw], ports, f"127.0.0.1:{free_port()}")
        log = log_dir / f"{sw}.log"
        log.unlink(missing_ok=True)
        started.append(SwitchProcess(target, spec, log=log).start())
        state.doc["switches"][sw] = {"grpc": spec.grpc, "log": str(log)}
        state.save()
        lab.grpc[sw], lab.logs[sw] = spec.grpc, str(log)
    deadline = time.monotonic() + START_TIMEOUT_S
    for switch in started:
        try:
            switch.wait_ready(deadline)
        except TargetError as exc:
            raise LabError(str(exc)) from None
    return lab


def down(name: str = NAME, grace: float = 5.0) -> list[str]:
    """Stop the lab's switches, delete its cables and namespaces and its state file; returns
    what it removed (empty when there was no such lab)."""
    state = LabState.load(name)
    if state is None:
        return []
    removed = _stop(switch_pids(state.doc["interfaces"]), grace)
    for iface in state.doc["interfaces"]:
        if Path(f"/sys/class/net/{iface}").exists():
            subprocess.run(["ip", "link", "del", iface], capture_output=True, timeout=10)
            removed.append(f"interface {iface}")
    for ns in state.doc["namespaces"]:
        if _netns_exists(ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
            removed.append(f"netns {ns}")
    still = state.existing()
    if still:
        raise LabError(f"lab '{name}': could not remove {', '.join(still)} (state kept in "
                       f"{state.path})")
    state.path.unlink(missing_ok=True)
    return removed


def _stop(pids: list[int], grace: float) -> list[str]:
    """SIGTERM the switches, SIGKILL what is left after ``grace`` seconds."""
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    for pid in pids:
        if _alive(pid):
            _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [f"process {pid}" for pid in pids]


def _signal(pid: int, sig: int) -> None:
    """The switch and its process group (it leads one: SwitchProcess starts a session)."""
    for send in (os.killpg, os.kill):
        try:
            send(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pid: int) -> bool:
    """Running (not a zombie: the lab's switches are nobody's children once `up` exits)."""
    try:
        return ") Z " not in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False

