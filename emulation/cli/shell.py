"""`inart shell`: p4runtime-shell on one P4Runtime switch.

    inart shell v1                                    # a switch of the running emulation
    inart shell --address 127.0.0.1:9559 [--device-id 0]   # any switch (`inart switch`, a lab)
    inart shell --address ... -c 'print(CounterEntry("InaIngress.events").read())'

A running emulation writes its switches' P4Runtime addresses to emulation.runs.emulate.STATE_FILE,
so a switch id is enough there.  The shell attaches without pushing a pipeline (it reads the
P4Info of the program the switch runs) and with a higher election id than the installer, so it
may also write; ``--push`` first loads the committed build onto a switch that runs none yet.
``--script`` / ``-c`` run Python with the interactive shell's names (TableEntry, CounterEntry,
p4info, ...) and exit with status 1 if it raises: the shell without a terminal.

p4runtime-shell runs in a private environment of its own, prepared on first use (about a
minute, once; `./dev.sh setup` does it ahead): it pins an old protobuf that inart's
environment need not have.  INART_P4RUNTIME_SHELL_PYTHON names an interpreter that already
has it instead.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from control_plane.deploy.pipeline import Pipeline, PipelineError
from control_plane.drivers.p4runtime import P4RuntimeClient, P4RuntimeError
from control_plane.shell_env import RUN_CODE, ShellEnvError, python
from emulation.runs.emulate import STATE_FILE

PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Endpoint:
    """Where the shell attaches: a P4Runtime address and the device id behind it."""

    grpc: str
    device_id: int


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("shell", help="p4runtime-shell on a P4Runtime switch",
                              description=__doc__.split("\n\n")[0],
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("switch", nargs="?", help="switch id of the running emulation, e.g. v1")
    p.add_argument("--address", metavar="HOST:PORT",
                   help="attach to the P4Runtime server at this address instead (a switch "
                        "started with `inart switch` or `inart lab up`, or any other)")
    p.add_argument("--device-id", type=int, default=None,
                   help="with --address: the switch's P4Runtime device id (default 0)")
    p.add_argument("--election-id", default="0,2", help="p4runtime-shell election id HIGH,LOW "
                   "(default 0,2: above the installer's, so the shell may write)")
    p.add_argument("--push", action="store_true",
                   help="load the committed P4 build (p4src/build) onto the switch first, for "
                        "a switch that runs no program yet; this clears its tables")
    run_what = p.add_mutually_exclusive_group()
    run_what.add_argument("--script", metavar="FILE",
                          help="run this Python file with the shell's names instead of the "
                               "interactive shell ('-' reads standard input)")
    run_what.add_argument("-c", "--command", metavar="CODE", help="run this Python code so")
    p.add_argument("--print-command", action="store_true",
                   help="print the p4runtime-shell command instead of running it")
    p.set_defaults(func=run)


def endpoint(switch: str | None, address: str | None, device_id: int | None) -> Endpoint:
    """The switch the arguments name: one of the running emulation, or ``--address``."""
    if address is not None:
        if switch is not None:
            raise ValueError(f"give a switch of the running emulation ('{switch}') or "
                             f"--address, not both")
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"--address {address!r}: expected HOST:PORT with a port 1-65535")
        if device_id is not None and device_id < 0:
            raise ValueError(f"--device-id {device_id}: expected >= 0")
        return Endpoint(address, 0 if device_id is None else device_id)
    if switch is None:
        raise ValueError("give a switch of the running emulation (e.g. v1) or --address "
                         "HOST:PORT of any P4Runtime switch")
    if device_id is not None:
        raise ValueError("--device-id goes with --address (an emulation's switch has its own)")
    try:
        state = json.loads(STATE_FILE.read_text())
    except (OSError, ValueError):
        raise ValueError(f"no running emulation ({STATE_FILE} missing): start `inart emulate "
                         f"--keep-up`, or give --address HOST:PORT of a switch started "
                         f"otherwise") from None
    switches = state.get("switches", {})
    if switch not in switches:
        raise ValueError(f"switch '{switch}': not in the running emulation "
                         f"(switches: {', '.join(switches)})")
    return Endpoint(switches[switch]["grpc"], int(switches[switch]["device_id"]))


def election_id(text: str) -> tuple[int, int]:
    """--election-id HIGH,LOW (or one number: LOW)."""
    parts = text.split(",")
    if len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"--election-id {text!r}: expected HIGH,LOW (two integers >= 0)")
    values = [int(p) for p in parts]
    return (0, values[0]) if len(values) == 1 else (values[0], values[1])


def shell_args(end: Endpoint, election: str, pipeline: Pipeline | None = None) -> list[str]:
    """p4runtime-shell's arguments for the switch (``pipeline``: pushed first)."""
    args = ["--grpc-addr", end.grpc, "--device-id", str(end.device_id), "--election-id",
            election]
    if pipeline is not None:
        args += ["--config", f"{pipeline.p4info},{pipeline.config}"]
    return args


def shell_command(interpreter: Path | str, args: list[str]) -> list[str]:
    """The interactive p4runtime-shell command line.  ``-I``: isolated from the caller's
    PYTHONPATH and working directory, so nothing of inart's environment leaks in."""
    return [str(interpreter), "-I", "-m", "p4runtime_sh", *args]


def check_program(end: Endpoint) -> None:
    """Refuse, with what to do, a switch that is not reachable or runs no program: the shell
    itself would start with no tables, or fail with a bare gRPC error."""
    client = P4RuntimeClient(end.grpc, end.device_id, timeout=PROBE_TIMEOUT_S)
    try:
        client.wait_ready()
        running = client.get_pipeline()
    finally:
        client.close()
    if running is None:
        raise ValueError(f"the switch at {end.grpc} (device {end.device_id}) runs no P4 program "
                         f"yet: install a plan first (`inart install`, `inart run`), or give "
                         f"--push to load the committed build (this clears its tables)")


def run_code(interpreter: Path, code: str, filename: str, args: list[str]) -> int:
    """Run ``code`` in p4runtime-shell's namespace (control_plane/shell_env/run_code.py, in
    the private environment), connected as ``args`` say; its exit status."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", prefix="inart-shell-") as f:
        f.write(code)
        f.flush()
        done = subprocess.run([str(interpreter), "-I", str(RUN_CODE), f.name, filename, "--",
                               *args])
    return done.returncode


def read_code(args: argparse.Namespace) -> tuple[str, str] | None:
    """The code and file name --script or -c give (None: the interactive shell)."""
    if args.command is not None:
        return args.command, "<command>"
    if args.script == "-":
        return sys.stdin.read(), "<stdin>"
    if args.script is not None:
        try:
            with open(args.script) as f:
                return f.read(), args.script
        except OSError as exc:
            raise ValueError(f"--script {args.script}: {exc.strerror}") from None
    return None


def run(args: argparse.Namespace) -> int:
    try:
        end = endpoint(args.switch, args.address, args.device_id)
        election = ",".join(map(str, election_id(args.election_id)))
        pipeline = Pipeline() if args.push else None
        if pipeline is not None:
            pipeline.check()
        argv = shell_args(end, election, pipeline)
        code = None if args.print_command else read_code(args)
        if pipeline is None and not args.print_command:
            check_program(end)
        interpreter = python()
    except (ValueError, PipelineError, P4RuntimeError, ShellEnvError) as exc:
        print(f"inart shell: error: {exc}", file=sys.stderr)
        return 2
    cmd = shell_command(interpreter, argv)
    if args.print_command:
        print(shlex.join(cmd))
        return 0
    if code is not None:
        return run_code(interpreter, *code, argv)
    os.execv(cmd[0], cmd)
    return 0  # not reached
