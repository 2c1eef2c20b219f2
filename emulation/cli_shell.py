"""`inart shell SWITCH`: p4runtime-shell on one switch of the emulation that is running now.

The running emulation writes its switches' P4Runtime addresses to emulation.emulate.STATE_FILE;
the shell attaches without pushing a pipeline (it reads the P4Info from the switch) and with a
higher election id than the installer, so it may also write.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from emulation.emulate import STATE_FILE


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("shell", help="p4runtime-shell on a switch of a running emulation",
                              description=__doc__)
    p.add_argument("switch", help="switch id, e.g. v1")
    p.add_argument("--election-id", default="0,2", help="p4runtime-shell election id")
    p.add_argument("--print-command", action="store_true",
                   help="print the p4runtime-shell command instead of running it")
    p.set_defaults(func=run)


def shell_command(switch: str, election_id: str) -> list[str]:
    """The p4runtime-shell command line for a switch of the running emulation."""
    try:
        state = json.loads(STATE_FILE.read_text())
    except (OSError, ValueError):
        raise ValueError(f"no running emulation ({STATE_FILE} missing): start `inart emulate` "
                         f"first") from None
    switches = state.get("switches", {})
    if switch not in switches:
        raise ValueError(f"switch '{switch}': not in the running emulation "
                         f"(switches: {', '.join(switches)})")
    sw = switches[switch]
    return [sys.executable, "-m", "p4runtime_sh", "--grpc-addr", sw["grpc"],
            "--device-id", str(sw["device_id"]), "--election-id", election_id]


def run(args: argparse.Namespace) -> int:
    try:
        cmd = shell_command(args.switch, args.election_id)
    except ValueError as exc:
        print(f"inart shell: error: {exc}", file=sys.stderr)
        return 2
    if args.print_command:
        print(" ".join(cmd))
        return 0
    os.execv(cmd[0], cmd)
    return 0  # not reached
