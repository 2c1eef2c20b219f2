"""Reading the program's event counters off running switches (read-only, no arbitration).

The emulation and `inart run` read them before and after a run and report the difference.
"""

from __future__ import annotations

from pathlib import Path

from control_plane.deploy.transaction import DEFAULT_ELECTION_ID, SwitchAddress, open_client

EVENTS_COUNTER = "InaIngress.events"


def read_events(switches: dict[str, SwitchAddress], p4info: Path, names: dict[str, int],
                timeout: float = 15.0) -> dict[str, dict[str, int]]:
    """Per switch: event name -> packets counted at its index of ``InaIngress.events``."""
    out = {}
    for sw, address in switches.items():
        client = open_client(address, DEFAULT_ELECTION_ID, timeout, primary=False)
        try:
            client.use_p4info(p4info)
            cells = client.read_counters(EVENTS_COUNTER)
        finally:
            client.close()
        out[sw] = {name: cells[i].packets for name, i in names.items() if i in cells}
    return out


def events_since(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]
                 ) -> dict[str, dict[str, int]]:
    """Per switch: what each event counter counted between two ``read_events``."""
    return {sw: {k: v - before[sw].get(k, 0) for k, v in ev.items()} for sw, ev in after.items()}
