"""A plan onto an inventory's switches, through the deploy layer's one way for its driver:
P4Runtime (bmv2, the embedded target, Stratum on a Tofino) through
control_plane/deploy/transaction.install with a fresh pipeline, BF Runtime (bf_switchd)
through control_plane/drivers/bfrt/install.  Both are all or nothing across the switches.
"""

from __future__ import annotations

from collections.abc import Callable

from control_plane.deploy.addressing import Addressing
from control_plane.deploy.counters import read_events
from control_plane.deploy.entries import Compiled
from control_plane.deploy.pipeline import TNA_BUILD, pipeline_for
from control_plane.deploy.portmap import remap_compiled
from control_plane.deploy.transaction import SwitchAddress, install
from control_plane.drivers.bfrt.sde import BfrtStubs
from control_plane.drivers.tofino.ports import PortsFile, load_ports
from realhosts.inventory import Inventory

EVENT_TARGETS = ("embedded", "bmv2")  # InaIngress.events alone holds every event there


def p4runtime_switches(inventory: Inventory, addressing: Addressing
                       ) -> dict[str, SwitchAddress]:
    """The inventory's switches as the deploy layer names them (device id defaulting to the
    deploy layer's numbering)."""
    return {name: SwitchAddress(name, s.address, addressing.device_id[name]
                                if s.device_id is None else s.device_id)
            for name, s in inventory.switches.items()}


def ports_files(inventory: Inventory) -> dict[str, PortsFile]:
    return {name: load_ports(s.ports) for name, s in inventory.switches.items() if s.ports}


def install_plan(inventory: Inventory, compiled: Compiled, addressing: Addressing,
                 timeout: float = 15.0, stubs: BfrtStubs | None = None) -> str:
    """Install ``compiled`` on every switch of the inventory; a one-line summary.
    ``stubs``: the BF Runtime messages (default: the SDE's ``bfrt_grpc``)."""
    if inventory.driver == "bfrt":
        from control_plane.drivers.bfrt.install import BfrtSwitch
        from control_plane.drivers.bfrt.install import install as bfrt_install
        from control_plane.drivers.tofino.stratum import TofinoFiles

        ports = ports_files(inventory)
        targets = [BfrtSwitch(sw.name, sw.address, ports[sw.name], sw.device_id)
                   for sw in p4runtime_switches(inventory, addressing).values()]
        written = bfrt_install(compiled, targets, TofinoFiles.in_build(TNA_BUILD),
                               timeout=timeout, stubs=stubs)
        return f"BF Runtime: {sum(written.values())} entries on {len(written)} switch(es)"
    if inventory.target == "tofino":
        compiled = remap_compiled(compiled, {sw: p.dev_ports()
                                             for sw, p in ports_files(inventory).items()})
    reports = install(compiled, p4runtime_switches(inventory, addressing),
                      pipeline_for(inventory.target), reset=True, timeout=timeout)
    written = sum(sum(r.written.values()) for r in reports)
    return f"P4Runtime: {written} entries and groups on {len(reports)} switch(es)"


def event_reader(inventory: Inventory, addressing: Addressing, names: dict[str, int]
                 ) -> Callable[[], dict[str, dict[str, int]]] | None:
    """What reads the switches' event counters, or None where this program's counters are
    split over several (TNA) or not read over P4Runtime (BF Runtime)."""
    if inventory.driver != "p4runtime" or inventory.target not in EVENT_TARGETS:
        return None
    switches = p4runtime_switches(inventory, addressing)
    p4info = pipeline_for(inventory.target).p4info
    return lambda: read_events(switches, p4info, names)
