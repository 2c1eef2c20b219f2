"""Plan port numbers -> a switch's own port numbers.

The deploy layer numbers a switch's ports 1, 2, ... (its neighbours in natural id order),
which is what bmv2 and the embedded target are started with.  A Tofino forwards on dev ports
(from its ports file), so its entries (``set_next_hop``'s ``port``) and multicast replicas are
rewritten before they are written; everything else stays as compiled.
"""

from __future__ import annotations

from dataclasses import replace

from control_plane.deploy.entries import Compiled, EntriesError, Entry, SwitchEntries

PORT_PARAM = "port"


def _port(mapping: dict[int, int], port: object, where: str) -> int:
    if not isinstance(port, int) or port not in mapping:
        raise EntriesError(f"{where}: plan port {port} has no entry in the ports file (it "
                           f"maps {', '.join(map(str, sorted(mapping))) or 'nothing'})")
    return mapping[port]


def remap_ports(entries: SwitchEntries, mapping: dict[int, int]) -> SwitchEntries:
    """``entries`` with every plan port replaced by ``mapping[port]``."""
    out = SwitchEntries(entries.switch)
    for e in entries.entries:
        if any(k == PORT_PARAM for k, _ in e.params):
            params = tuple((k, _port(mapping, v, f"switch '{entries.switch}': {e.describe()}")
                            if k == PORT_PARAM else v) for k, v in e.params)
            e = Entry(e.table, e.match, e.action, params, e.why)
        out.entries.append(e)
    for g in entries.groups:
        where = f"switch '{entries.switch}': multicast group {g.group_id}"
        out.groups.append(replace(g, replicas=tuple((_port(mapping, p, where), rid)
                                                    for p, rid in g.replicas)))
    return out





def remap_compiled(compiled: Compiled, mappings: dict[str, dict[int, int]]) -> Compiled:
    """``compiled`` with each switch's ports remapped (every switch needs a mapping)."""
    missing = [sw for sw in compiled.switches if sw not in mappings]
    if missing:
        raise EntriesError(f"no ports file for switch(es) {', '.join(missing)}")
    return replace(compiled, switches={sw: remap_ports(e, mappings[sw])
                                       for sw, e in compiled.switches.items()})
