"""`inart switch`: one standalone P4 switch (embedded target or bmv2) in the foreground.

    inart switch --target embedded -i 1@veth1 -i 2@veth2 --listen 127.0.0.1:9559

It starts without a program, like ``simple_switch_grpc --no-p4``: push the pipeline and the
entries with `inart install` (or any P4Runtime client).  Without --listen it serves P4Runtime on
a loopback port that is free at start and says which when ready (no fixed default: another
switch, `inart serve` or anything else may hold any given port).  Runs until Ctrl-C or
SIGTERM, checks the switch's health every second and exits with an error if the switch dies.
``--metrics ADDRESS`` serves the program's counters (read over P4Runtime, so for either
target) and the ports' packets and bytes on /metrics there (docs/observability.md).
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from control_plane.cli.args import InputError, add_metrics, deprecate
from control_plane.deploy.pipeline import Pipeline
from control_plane.deploy.transaction import SwitchAddress
from control_plane.localhost import free_port
from control_plane.observe.exporter import MetricsError
from control_plane.observe.exporter import check_address as check_metrics_address
from control_plane.observe.exporter import start as start_metrics
from control_plane.observe.p4runtime_metrics import registry_for as p4runtime_registry
from emulation.targets import TARGETS, SwitchProcess, SwitchSpec, TargetError, get_target
from emulation.targets.embedded.__main__ import parse_interface


def run(args: argparse.Namespace) -> int:
    ports = dict(args.interface)
    if len(ports) != len(args.interface):
        raise SystemExit("inart switch: error: a port number is given twice with -i")
    args.listen = args.listen or f"127.0.0.1:{free_port()}"
    spec = SwitchSpec(args.device_id, ports, args.listen, log_level=args.log_level,
                      log_file=Path(args.log_file) if args.log_file else None)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    if args.metrics is not None:
        try:
            check_metrics_address(args.metrics)
        except MetricsError as exc:
            raise InputError(f"--metrics: {exc}") from exc
    metrics = None
    try:
        target = get_target(args.target)
        with SwitchProcess(target, spec) as switch:
            # the program's counters over P4Runtime, whatever the target (read-only session)
            metrics = start_metrics(args.metrics, p4runtime_registry(
                SwitchAddress(f"device {args.device_id}", args.listen, args.device_id),
                Pipeline().p4info, ports)) if args.metrics is not None else None
            print(f"inart switch: {target.describe()} ready: device {args.device_id}, "
                  f"P4Runtime on {args.listen}, ports "
                  f"{', '.join(f'{p}@{i}' for p, i in sorted(ports.items())) or 'none'}"
                  f"{f', metrics on {metrics.url}' if metrics else ''}", flush=True)
            while not done.wait(1.0):
                problem = switch.health()
                if problem:
                    print(f"inart switch: error: the switch {problem}", flush=True)
                    return 1
    except MetricsError as exc:
        print(f"inart switch: error: --metrics: {exc}", flush=True)
        return 1
    except TargetError as exc:
        print(f"inart switch: error: {exc}", flush=True)
        return 2
    finally:
        if metrics is not None:
            metrics.close()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("switch", help="run one P4 switch (embedded target or bmv2) alone",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="embedded", choices=sorted(TARGETS))
    p.add_argument("-i", "--interface", action="append", type=parse_interface, default=[],
                   metavar="PORT@IFACE", help="attach port PORT to interface IFACE (repeatable)")
    p.add_argument("--listen", default=None, metavar="HOST:PORT",
                   help="where it serves P4Runtime (default: a free loopback port, printed when "
                        "ready; give 0.0.0.0:PORT to accept remote controllers)")
    deprecate(p, "--grpc", "--listen")
    p.add_argument("--device-id", type=int, default=0)
    p.add_argument("--log-level", default="warn",
                   choices=["trace", "debug", "info", "warn", "error", "off"])
    p.add_argument("--log-file", help="bmv2: its log file (the embedded target logs to stderr)")
    add_metrics(p)
    p.set_defaults(func=run)
