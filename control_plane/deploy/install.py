"""Write compiled entries to running switches over P4Runtime, with progress and a summary.

Per switch: push the pipeline (P4Info + bmv2 JSON; this also resets its registers), then the
multicast groups, then the table entries in batches (one Write RPC per batch keeps installing
fattree-sized plans fast).  A failed update raises InstallError naming the switch, the entry
(from the per-update error the server returns) and the server's message; the caller then tears
the network down, so nothing half-installed outlives the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from p4.v1 import p4runtime_pb2
from tqdm import tqdm

from control_plane.deploy.addressing import Addressing
from control_plane.deploy.entries import Compiled, Entry
from control_plane.deploy.pipeline import Pipeline, PipelineError
from control_plane.drivers.p4runtime import P4RuntimeClient, P4RuntimeError, build_table_entry

BATCH = 128


class InstallError(RuntimeError):
    """A switch refused an entry or could not be reached; the message names both."""


def _batches(items: list, size: int) -> Iterable[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _failed_index(message: str) -> int | None:
    match = re.search(r"update (\d+):", message)
    return int(match.group(1)) if match else None


def connect(addr: Addressing, switch: str, timeout: float = 15.0) -> P4RuntimeClient:
    """A primary P4Runtime session with one switch of the network."""
    client = P4RuntimeClient(addr.grpc_address(switch), addr.device_id[switch], timeout=timeout)
    try:
        return client.connect()
    except P4RuntimeError as exc:
        client.close()
        raise InstallError(f"switch '{switch}': {exc}") from None


def install_switch(client: P4RuntimeClient, switch: str, compiled: Compiled, pipeline: Pipeline,
                   bar: tqdm | None = None) -> None:
    """Pipeline, groups and entries of one switch."""
    try:
        client.set_pipeline(pipeline.p4info, pipeline.config)
    except P4RuntimeError as exc:
        raise InstallError(f"switch '{switch}': pipeline push failed: {exc}") from None
    info = client.info
    assert info is not None
    swe = compiled.switches[switch]
    for group in swe.groups:
        try:
            client.insert_multicast_group(group.group_id, list(group.replicas))
        except P4RuntimeError as exc:
            raise InstallError(f"switch '{switch}': multicast group {group.group_id} "
                               f"({group.why}) refused: {exc}") from None
        if bar is not None:
            bar.update(1)
    for chunk in _batches(swe.entries, BATCH):
        updates = []
        for entry in chunk:
            try:
                proto = build_table_entry(info, entry.table, dict(entry.match), entry.action,
                                          dict(entry.params))
            except P4RuntimeError as exc:
                raise InstallError(f"switch '{switch}': cannot build {entry.describe()}: "
                                   f"{exc}") from None
            update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
            update.entity.table_entry.CopyFrom(proto)
            updates.append(update)
        try:
            client.write(updates, f"write of {len(updates)} entries")
        except P4RuntimeError as exc:
            idx = _failed_index(str(exc))
            bad: Entry | None = chunk[idx] if idx is not None and idx < len(chunk) else None
            what = bad.describe() if bad else f"one of {len(chunk)} entries"
            raise InstallError(f"switch '{switch}': entry {what} refused: {exc}") from None
        if bar is not None:
            bar.update(len(chunk))


def install(addr: Addressing, compiled: Compiled, pipeline: Pipeline,
            quiet: bool = False) -> dict[str, dict[str, int]]:
    """Install every switch; returns the per-switch summary (entries per table)."""
    try:
        pipeline.check()
    except PipelineError as exc:
        raise InstallError(str(exc)) from None
    total = compiled.total()
    with tqdm(total=total, desc="install", unit="entry", disable=quiet) as bar:
        for switch in compiled.switches:
            bar.set_postfix(switch=switch)
            client = connect(addr, switch)
            try:
                install_switch(client, switch, compiled, pipeline, bar)
            finally:
                client.close()
    return {sw: s.summary() for sw, s in compiled.switches.items()}


def summary_table(summary: dict[str, dict[str, int]]) -> str:
    """Switch x table counts as aligned text."""
    cols = sorted({k for row in summary.values() for k in row})
    head = f"{'switch':8s}" + "".join(f"{c:>18s}" for c in cols)
    lines = [head]
    for sw, row in summary.items():
        lines.append(f"{sw:8s}" + "".join(f"{row.get(c, 0):18d}" for c in cols))
    return "\n".join(lines)
