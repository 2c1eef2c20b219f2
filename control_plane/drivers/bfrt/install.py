"""A plan onto Tofino switches through BF Runtime: push the TNA program, bring the front-panel
ports of the ports file up, write the plan's multicast groups and table entries.

The entries are the deploy layer's (control_plane/deploy/entries.py, the same that bmv2 gets),
with plan ports rewritten to dev ports (control_plane/deploy/portmap.py).  All or nothing: the
program push resets the switch, every write is journalled, and a failure anywhere deletes what
this run wrote on every switch (in reverse) before the error is raised.  Ports this run
enabled stay up (they carry no plan state).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from control_plane.deploy.entries import Compiled
from control_plane.deploy.portmap import remap_ports
from control_plane.drivers.bfrt.client import (
    ALL_PIPES,
    DEFAULT_PUSH_TIMEOUT_S,
    BfrtClient,
    BfrtError,
    Program,
)
from control_plane.drivers.bfrt.entities import (
    multicast_entries,
    port_entry,
    port_lookup_entry,
    table_entry,
)
from control_plane.drivers.bfrt.info import BfrtInfo, BfrtInfoError
from control_plane.drivers.bfrt.sde import BfrtStubs, load_stubs
from control_plane.drivers.tofino.ports import AUTONEG, FECS, SPEEDS, PortsFile
from control_plane.drivers.tofino.stratum import P4_NAME, TofinoFiles

BATCH = 128
Progress = Callable[[str, str, int], None]


class BfrtInstallError(RuntimeError):
    """The install failed; the message names the switch and says what was rolled back."""


@dataclass(frozen=True)
class BfrtSwitch:
    """One Tofino of the plan: where bf_switchd serves BF Runtime, and its ports file."""

    name: str
    address: str  # host:port, port 50052 by default
    ports: PortsFile
    device_id: int = 0


@dataclass
class _Run:
    switch: BfrtSwitch
    client: BfrtClient
    info: BfrtInfo | None = None
    written: list = field(default_factory=list)  # journal: TableEntry messages, in order
    maybe: list = field(default_factory=list)  # the batch of a failed Write: some may be in


def program_of(files: TofinoFiles, pipe_scope: tuple[int, ...] = ALL_PIPES) -> Program:
    files.check()
    return Program(P4_NAME, files.bfrt_json.read_bytes(), files.context_json.read_bytes(),
                   files.binary.read_bytes(), pipe_scope)


def resolve_dev_ports(run: _Run) -> dict[int, int]:
    """plan port -> dev port: the file's dev_port, else bf_switchd's $PORT_STR_INFO."""
    assert run.info is not None
    pb2 = run.client.pb2
    fronts = [s.front for s in run.switch.ports.ports.values()
              if s.dev_port is None and s.front is not None]
    resolved: dict[str, int] = {}
    for front in fronts:
        key = port_lookup_entry(pb2, run.info, front)
        got = run.client.read([key], P4_NAME, f"$PORT_STR_INFO {front}")
        dev_field = run.info.table("$PORT_STR_INFO").datum("$DEV_PORT")
        values = [f for te in got for f in te.data.fields if f.field_id == dev_field.id]
        if not values:
            raise BfrtError(f"{run.switch.address}: front-panel port {front} unknown to "
                            f"bf_switchd ({run.switch.ports.path})")
        resolved[front] = int.from_bytes(values[0].stream, "big")
    return run.switch.ports.dev_ports(resolved)


def configure_ports(run: _Run, dev_ports: dict[int, int]) -> None:
    """Add and enable every port of the ports file ($PORT), with its speed/FEC/AN."""
    assert run.info is not None
    entries = []
    for k, spec in sorted(run.switch.ports.ports.items()):
        entries.append(port_entry(run.client.pb2, run.info, dev_ports[k], SPEEDS[spec.speed],
                                  FECS[spec.fec], AUTONEG[spec.autoneg]))
    run.client.write(run.client.pb2.Update.INSERT, entries, P4_NAME,
                     f"{len(entries)} ports of {run.switch.ports.path}")


def _plan_entries(run: _Run, compiled: Compiled, dev_ports: dict[int, int]) -> list:
    """The plan's PRE nodes and groups, then table entries, as TableEntry messages."""
    assert run.info is not None
    pb2 = run.client.pb2
    mine = remap_ports(compiled.switches[run.switch.name], dev_ports)
    out = []
    for g in mine.groups:
        out += multicast_entries(pb2, run.info, g.group_id, list(g.replicas))
    for e in mine.entries:
        try:
            out.append(table_entry(pb2, run.info, e.table, dict(e.match), e.action,
                                   dict(e.params)))
        except BfrtInfoError as exc:
            raise BfrtInfoError(f"switch '{run.switch.name}': {e.describe()}: {exc}") from None
    return out


def _rollback(runs: list[_Run]) -> list[str]:
    """Delete what each run wrote (last first); the entries of a failed batch one by one,
    as a failed Write may have applied some of them."""
    lines = []
    for run in reversed(runs):
        delete = run.client.pb2.Update.DELETE
        undone = 0
        for te in reversed(run.maybe):
            try:
                run.client.write(delete, [te], P4_NAME, "rollback of a failed batch")
                undone += 1
            except BfrtError:
                pass  # it was not written
        try:
            for start in range(0, len(run.written), BATCH):
                batch = list(reversed(run.written))[start:start + BATCH]
                run.client.write(delete, batch, P4_NAME, "rollback")
            if run.written or undone:
                lines.append(f"{run.switch.name}: deleted {len(run.written) + undone} entries")
        except BfrtError as exc:
            lines.append(f"{run.switch.name}: could NOT delete all {len(run.written)} "
                         f"entries: {exc}")
    return lines


def install(compiled: Compiled, switches: list[BfrtSwitch], files: TofinoFiles, *,
            push: bool = True, stubs: BfrtStubs | None = None, timeout: float = 20.0,
            push_timeout: float = DEFAULT_PUSH_TIMEOUT_S,
            pipe_scope: tuple[int, ...] = ALL_PIPES,
            progress: Progress | None = None) -> dict[str, int]:
    """Install ``compiled`` on ``switches`` (with ``push=False`` on the program they already
    run); returns entries written per switch.  ``timeout`` bounds each call, ``push_timeout``
    the program push."""
    stubs = stubs or load_stubs()
    for sw in switches:
        if sw.name not in compiled.switches:
            raise BfrtInstallError(f"switch '{sw.name}': the compiled plan has no such switch")
    program = program_of(files, pipe_scope)
    runs: list[_Run] = []
    try:
        for sw in switches:
            runs.append(_Run(sw, BfrtClient(stubs, sw.address, sw.device_id, timeout=timeout,
                                            push_timeout=push_timeout).connect()))
        for run in runs:
            if push:
                run.client.push(program)
            config = run.client.get_config()
            if program.name not in [c.p4_name for c in config.config]:
                raise BfrtError(f"{run.switch.address}: bf_switchd runs no program "
                                f"'{program.name}' (it runs: "
                                f"{', '.join(c.p4_name for c in config.config) or 'none'}); "
                                f"push it first")
            run.info = run.client.info = BfrtInfo.from_bytes(
                program.bfrt_json, config.non_p4_config.bfruntime_info)
            dev_ports = resolve_dev_ports(run)
            configure_ports(run, dev_ports)
            todo = _plan_entries(run, compiled, dev_ports)
            for start in range(0, len(todo), BATCH):
                batch = todo[start:start + BATCH]
                run.maybe = batch
                run.client.write(run.client.pb2.Update.INSERT, batch, P4_NAME,
                                 f"{len(batch)} plan entries")
                run.written.extend(batch)
                run.maybe = []
                if progress is not None:
                    progress(run.switch.name, "written", len(batch))
        return {run.switch.name: len(run.written) for run in runs}
    except (BfrtError, BfrtInfoError) as exc:
        lines = _rollback(runs)
        done = "\nrolled back:\n  " + "\n  ".join(lines) if lines else "\nnothing was written"
        raise BfrtInstallError(f"BF Runtime install failed: {exc}{done}") from None
    finally:
        for run in runs:
            run.client.close()
