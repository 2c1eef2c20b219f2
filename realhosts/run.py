"""One job on real hosts: check the hosts, install the plan on the switches, start the PSs and
workers (host_stack/train/hostrun, as the emulation does), measure, stop everything.

The hosts get the deploy layer's IPv4 addresses (checked, never changed); the entries name the
hosts' real MACs (read by the check).  Hosts get static ARP for their peers and for the job's
result address (the switches answer no ARP), removed again at the end.  Whatever happens --
a host failing, a deadline, Ctrl-C -- every process on every host is stopped before this
returns or raises, and the logs are copied to ``out/hosts``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from control_plane.deploy.addressing import Addressing, assign
from control_plane.deploy.counters import events_since
from control_plane.deploy.entries import Compiled, compile_plan
from control_plane.model.plan import Plan
from control_plane.p4build.sources import event_names
from emulation.measure.metrics import summarize
from host_stack.ddp.hostscript import ScriptJob, run_script_hosts
from host_stack.remote.launchers import Fleet, LaunchError
from host_stack.train.hostrun import (
    JobResult,
    TrafficConfig,
    plan_files,
    run_hosts,
    transport_argv,
)
from realhosts.checks import check_hosts
from realhosts.install import event_reader, install_plan
from realhosts.inventory import Inventory


@dataclass
class HostRun:
    """A finished job: the plan, its entries, the processes' output and the metrics row."""

    plan: Plan
    compiled: Compiled
    job: JobResult
    row: dict


def nic_bytes(fleet: Fleet, inventory: Inventory) -> dict[str, tuple[int, int]]:
    """(tx_bytes, rx_bytes) of every host's data-plane interface."""
    out = {}
    for name, spec in inventory.hosts.items():
        base = f"/sys/class/net/{spec.interface}/statistics"
        proc = fleet[name].run(["cat", f"{base}/tx_bytes", f"{base}/rx_bytes"], in_repo=False)
        values = proc.stdout.split()
        if proc.returncode != 0 or len(values) != 2:
            raise LaunchError(f"{spec.describe()}: cannot read the counters of "
                              f"{spec.interface}: {proc.stderr.decode(errors='replace')}")
        out[name] = (int(values[0]), int(values[1]))
    return out


def arp_lines(inventory: Inventory, addressing: Addressing, result_addr: str, host: str
              ) -> list[tuple[str, str]]:
    """(address, MAC) a host needs: its peers' NICs, and the result address at its ToR."""
    peers = [(addressing.ip[p], addressing.mac[p]) for p in inventory.hosts if p != host]
    return [*peers, (result_addr, addressing.mac[addressing.tor[host]])]


def set_arp(fleet: Fleet, inventory: Inventory, addressing: Addressing, result_addr: str,
            add: bool) -> None:
    """Static ARP on every host (``add``), or remove it again (errors ignored then)."""
    for host, spec in inventory.hosts.items():
        lines = "".join(f"neigh {'replace' if add else 'del'} {ip} "
                        f"{f'lladdr {mac} nud permanent ' if add else ''}dev {spec.interface}\n"
                        for ip, mac in arp_lines(inventory, addressing, result_addr, host))
        proc = fleet[host].run(["ip", "-force", "-batch", "-"], input=lines.encode(),
                               in_repo=False)
        if add and proc.returncode != 0:
            raise LaunchError(f"{spec.describe()}: static ARP failed (needs root on the "
                              f"host): {proc.stderr.decode(errors='replace').strip()}")


def run_inventory(inventory: Inventory, plan: Plan, cfg: TrafficConfig, out: Path,
                  quiet: bool = False, say: Callable[[str], None] = print,
                  script: ScriptJob | None = None) -> HostRun:
    """The whole job (``script``: a user's PyTorch script on the workers instead of inart's
    processes); raises (HostCheckError, DeployError, TrafficError, ...) after stopping
    everything."""
    cfg.check()
    addressing = assign(inventory.topology)
    out.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="inart-run-"))
    fleet = Fleet(inventory.hosts, run_dir)
    arp_set = None
    try:
        macs = check_hosts(fleet, inventory, addressing)
        say(f"hosts ready: {len(macs)} ({', '.join(sorted(macs))})")
        addressing = replace(addressing, mac={**addressing.mac, **macs})
        compiled = compile_plan(plan, addressing)
        say(f"installed {plan.scheme}: {install_plan(inventory, compiled, addressing)}")
        arp_set = compiled.result_addr
        set_arp(fleet, inventory, addressing, arp_set, add=True)
        events = event_reader(inventory, addressing, event_names())
        ev0 = events() if events else {}
        nic0 = nic_bytes(fleet, inventory)
        source = plan_files(addressing, plan, compiled, run_dir)
        if script is not None:
            rank0 = min(source.workers, key=source.ranks.get)
            script = replace(script, master_addr=addressing.ip[rank0],
                             job_argv=tuple(transport_argv(cfg)),
                             iface={w: inventory.hosts[w].interface for w in source.workers})
            result = run_script_hosts(fleet, source, script, run_dir, quiet, files=fleet)
            ev1 = events() if events else {}
            return HostRun(plan, compiled, JobResult({}, {}, result.ps_stats, {},
                                                     result.wall_s),
                           {"scheme": plan.scheme, "wall_s": result.wall_s,
                            "switch_events": events_since(ev0, ev1), "ps": result.ps_stats,
                            "rank0_lines": result.rank0_lines,
                            "event_counters": events is not None})
        job = run_hosts(fleet, source, cfg, run_dir, quiet, files=fleet)
        nic1 = nic_bytes(fleet, inventory)
        ev1 = events() if events else {}
        delta = events_since(ev0, ev1)
        # the hosts see only their own links: both directions of each host's link
        link_total = sum(nic1[h][i] - nic0[h][i] for h in nic1 for i in (0, 1))
        ps_in = sum(nic1[s][1] - nic0[s][1] for s in inventory.topology.pss)
        row = summarize(plan, job, cfg, link_total, ps_in, delta)
        row.update(topology=inventory.topology_spec, target=inventory.target,
                   driver=inventory.driver, scale_mbps_per_unit=(cfg.unit_bps or 0) / 1e6,
                   event_counters=events is not None)
        if cfg.mode == "train":
            digests = {d.get("params_sha256") for d in job.done.values()}
            row["accuracy"] = next(iter(job.done.values()), {}).get("accuracy")
            row["params_sha256"] = digests.pop() if len(digests) == 1 else "differ"
        return HostRun(plan, compiled, job, row)
    finally:
        fleet.stop()
        if arp_set is not None:
            try:
                set_arp(fleet, inventory, addressing, arp_set, add=False)
            except (subprocess.TimeoutExpired, OSError):
                say("(static ARP entries could not be removed from every host)")
        shutil.copytree(run_dir, out / "hosts", dirs_exist_ok=True)
        fleet.cleanup()
        shutil.rmtree(run_dir, ignore_errors=True)
