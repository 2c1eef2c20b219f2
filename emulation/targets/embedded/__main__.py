"""`python -m emulation.targets.embedded`: a drop-in for `simple_switch_grpc`.

Same argument syntax: ``[--no-p4 | JSON] --device-id N -i PORT@IFACE ... [--log-level L]
-- --grpc-server-addr HOST:PORT``.  Options bmv2 has that mean nothing here (--thrift-port,
--log-console, --pcap, --cpu-port ...) are accepted so harnesses can swap executables.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence

from control_plane.cli.args import add_metrics
from emulation.targets.embedded.coverage import write_if_recording
from emulation.targets.embedded.json_loader import PipelineError
from emulation.targets.embedded.pipeline import Switch, load_program

LOG_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
              "warn": logging.WARNING, "error": logging.ERROR, "off": logging.CRITICAL}


def parse_interface(text: str) -> tuple[int, str]:
    """``PORT@IFACE`` -> (port, iface), as bmv2's -i option."""
    port, sep, iface = text.partition("@")
    if not sep or not port.isdigit() or not iface:
        raise argparse.ArgumentTypeError(f"interface {text!r}: expected PORT@IFACE, e.g. 1@veth0")
    return int(port), iface


def build_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    main = argparse.ArgumentParser(prog="python -m emulation.targets.embedded",
                                   description="Embedded P4 target (bmv2 JSON executor "
                                               "with a P4Runtime server).")
    main.add_argument("config", nargs="?", help="bmv2 JSON produced by p4c")
    main.add_argument("--no-p4", action="store_true", help="start without a program")
    main.add_argument("-i", "--interface", action="append", type=parse_interface, default=[],
                      metavar="PORT@IFACE", help="attach port number PORT to interface IFACE")
    main.add_argument("--device-id", type=int, default=0)
    main.add_argument("-L", "--log-level", default="info", choices=sorted(LOG_LEVELS))
    main.add_argument("--thrift-port", type=int, help="accepted for bmv2 compatibility; unused")
    main.add_argument("--log-console", action="store_true", help="log to stderr (always on)")
    main.add_argument("--log-file", help="also write the log to this file")
    main.add_argument("--pcap", nargs="?", const=".", help="accepted for compatibility; unused")
    main.add_argument("--nanolog", help="accepted for compatibility; unused")
    main.add_argument("--log-flush", action="store_true", help="accepted for compatibility")
    add_metrics(main)
    target = argparse.ArgumentParser(prog="target options", add_help=False)
    # bmv2 listens on every interface by default; a P4Runtime server accepts table writes from
    # anyone who reaches it, so ours listens on loopback unless told otherwise
    target.add_argument("--grpc-server-addr", default="127.0.0.1:9559",
                        help="P4Runtime address (default loopback only, unlike bmv2's "
                             "0.0.0.0:9559; give 0.0.0.0:PORT to accept remote controllers)")
    target.add_argument("--cpu-port", type=int, help="accepted for compatibility; unused")
    return main, target


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, target_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) \
        if "--" in argv else (argv, [])
    main_parser, target_parser = build_parsers()
    args = main_parser.parse_args(own)
    targs, unknown = target_parser.parse_known_args(target_args)
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if args.log_file:
        handlers.append(logging.FileHandler(args.log_file))
    logging.basicConfig(level=LOG_LEVELS[args.log_level], handlers=handlers,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    log = logging.getLogger("inart.embedded")
    if unknown:
        log.warning("ignoring unknown target options %s", unknown)
    if args.config and args.no_p4:
        main_parser.error("give either a JSON config or --no-p4, not both")
    if not args.config and not args.no_p4:
        main_parser.error("a JSON config or --no-p4 is required")
    ports = dict(args.interface)
    if len(ports) != len(args.interface):
        main_parser.error("a port number is given twice with -i")

    switch = Switch()
    if args.config:
        try:
            with open(args.config, "rb") as f:
                switch.program = load_program(f.read())
        except (OSError, PipelineError) as exc:
            log.error("cannot load %s: %s", args.config, exc)
            return 2

    from control_plane.observe.exporter import MetricsError
    from control_plane.observe.exporter import start as start_metrics
    from emulation.targets.embedded.metrics import registry_for
    from emulation.targets.embedded.p4runtime_server import serve
    from emulation.targets.embedded.ports import PortLoop
    from emulation.targets.embedded.stats import describe, reasons

    lock = threading.Lock()
    try:
        loop = PortLoop(ports, switch.process_batch, lock, switch.drops)
    except OSError as exc:
        log.error("cannot open interfaces %s: %s", ports, exc)
        return 2
    try:
        server, _ = serve(switch, args.device_id, targs.grpc_server_addr, lock, ports=loop)
    except OSError as exc:
        log.error("%s", exc)
        loop.stop()
        return 2
    try:
        metrics = start_metrics(args.metrics, registry_for(switch, lock, ports))
    except MetricsError as exc:
        log.error("--metrics: %s", exc)
        server.stop(grace=0)
        loop.stop()
        return 2
    loop.start()
    log.info("embedded target: device %d, ports %s, P4Runtime on %s%s", args.device_id,
             ports, targs.grpc_server_addr, f", metrics on {metrics.url}" if metrics else "")
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    while not done.wait(1.0):
        pass
    server.stop(grace=1.0)
    if metrics is not None:
        metrics.close()
    loop.stop()
    written = write_if_recording()
    if written:
        log.info("P4 statement coverage written to %s", written)
    log.info("stopped; rx %d, tx %d, drops and errors: %s", switch.stats["rx"],
             switch.stats["tx"], describe(reasons(switch.snapshot())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
