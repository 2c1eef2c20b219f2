"""`inart serve`: the controller service (gRPC API in control_plane/service/proto, docs/api.md).

    inart serve [--listen 127.0.0.1:50070] [--token-file F] [--tls-cert C --tls-key K]
                [--insecure] [--state out/serve] [--switches p4runtime|memory]
                [--metrics 127.0.0.1:0|HOST:PORT|off] [--web HOST:PORT]

Listens on loopback by default; any other address needs --token-file and TLS (--tls-cert,
--tls-key; or --insecure, explicitly).  State (topology, jobs,
plan versions, events) lives in STATE/state.sqlite: a restarted service recovers its jobs and
reconciles the switches instead of installing anything twice.  Prometheus metrics are on
/metrics of a free loopback port unless told otherwise (docs/observability.md); ``--web``
serves the live web view.  Runs until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from pathlib import Path

from control_plane.cli.args import add_metrics
from control_plane.deploy.pipeline import TARGET_CONFIG, PipelineError, pipeline_for
from control_plane.drivers.p4runtime import P4Info
from control_plane.localhost import SERVICE_PORT, port_holder
from control_plane.observe.exporter import MetricsError
from control_plane.observe.exporter import check_address as check_metrics_address
from control_plane.observe.exporter import start as start_metrics
from control_plane.observe.service_view import ServiceSource
from control_plane.observe.web import WebError, WebView
from control_plane.observe.web import check_address as check_web_address
from control_plane.repo import out_dir
from control_plane.service.auth import (
    AuthConfigError,
    check_listen,
    read_token,
    server_credentials,
)
from control_plane.service.controller import Controller
from control_plane.service.server import build_server
from control_plane.service.store import Store
from control_plane.service.switches import Installer, MemoryInstaller, P4RuntimeInstaller

DEFAULT_LISTEN = f"127.0.0.1:{SERVICE_PORT}"


def parse_election_id(text: str) -> tuple[int, int]:
    high, _, low = text.partition(",")
    try:
        value = (int(high), int(low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"election id {text!r}: expected HIGH,LOW") from None
    if min(value) < 0 or value == (0, 0):
        raise argparse.ArgumentTypeError(f"election id {text!r}: expected non-negative, not 0,0")
    return value


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s: %(message)s")
    try:
        token = read_token(args.token_file) if args.token_file else None
        credentials = server_credentials(args.tls_cert, args.tls_key)
        check_listen(args.listen, token, credentials is not None, args.insecure)
        if args.web is not None:
            check_web_address(args.web, token, credentials is not None, args.insecure)
        if args.metrics is not None:
            check_metrics_address(args.metrics)
        pipeline = pipeline_for(args.target)
    except (AuthConfigError, PipelineError, WebError, MetricsError) as exc:
        print(f"inart serve: error: {exc}", flush=True)
        return 2
    installer: Installer = (MemoryInstaller() if args.switches == "memory" else
                            P4RuntimeInstaller(pipeline, args.election_id, args.p4_timeout,
                                               holdoff=args.reconcile_interval))
    controller = Controller(Store(args.state), installer, P4Info.load(pipeline.p4info),
                            drain_seconds=args.drain_seconds,
                            reconcile_interval=args.reconcile_interval)
    try:
        server, port = build_server(controller, args.listen, token, credentials)
    except AuthConfigError as exc:
        print(f"inart serve: error: {exc}", flush=True)
        installer.close()
        return 2
    except RuntimeError as exc:  # gRPC could not bind --listen
        port_text = args.listen.rpartition(":")[2]
        holder = port_holder(int(port_text)) if port_text.isdigit() and \
            not args.listen.startswith("unix:") else str(exc)
        print(f"inart serve: error: cannot listen on {args.listen}: in use by {holder} "
              f"(give another --listen)", flush=True)
        installer.close()
        return 1
    try:
        metrics = start_metrics(args.metrics, controller.metrics.registry)
    except MetricsError as exc:
        print(f"inart serve: error: --metrics: {exc}", flush=True)
        server.stop(grace=0)
        installer.close()
        return 1
    try:
        web = None if args.web is None else WebView(
            args.web, ServiceSource(controller).snapshot, token, args.tls_cert, args.tls_key,
            args.insecure)
    except WebError as exc:
        print(f"inart serve: error: {exc}", flush=True)
        server.stop(grace=0)
        if metrics is not None:
            metrics.close()
        installer.close()
        return 1
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    controller.start()
    where = (args.listen if args.listen.startswith("unix:")
             else f"{args.listen.rpartition(':')[0]}:{port}")
    jobs = len(controller.list_jobs(False).jobs)
    print(f"inart serve: listening on {where} (token: {'yes' if token else 'no'}, TLS: "
          f"{'yes' if credentials else 'no'}), switches: {args.switches}, state "
          f"{Path(args.state) / 'state.sqlite'}, {jobs} job(s) recovered"
          f"{f'; metrics on {metrics.url}' if metrics else ''}"
          f"{f'; web view on {web.url}' if web else ''}", flush=True)
    done.wait()
    server.stop(grace=2).wait()
    if web is not None:
        web.close()
    if metrics is not None:
        metrics.close()
    controller.stop()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the controller service (gRPC API)",
                       description=__doc__.split("\n\n")[0],
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                   help="where it listens: a non-loopback HOST needs --token-file and TLS (port 0: "
                        "any free); unix:PATH for a Unix socket")
    p.add_argument("--token-file", help="file holding the bearer token requests must carry")
    p.add_argument("--tls-cert", help="PEM certificate: serve TLS (with --tls-key)")
    p.add_argument("--tls-key", help="PEM private key of --tls-cert")
    p.add_argument("--insecure", action="store_true",
                   help="off loopback, serve plaintext (without TLS): the token and plans cross "
                        "the network in clear")
    p.add_argument("--state", type=Path, default=out_dir("serve"),
                   help="directory of the state file (state.sqlite)")
    p.add_argument("--switches", choices=("p4runtime", "memory"), default="p4runtime",
                   help="real switches over P4Runtime, or switches held in memory (try the "
                        "API without any)")
    p.add_argument("--target", choices=sorted(TARGET_CONFIG), default="embedded",
                   help="which pipeline config the switches take")
    p.add_argument("--election-id", type=parse_election_id, default=(0, 1), metavar="HIGH,LOW")
    p.add_argument("--p4-timeout", type=float, default=5.0,
                   help="seconds to wait for a switch's P4Runtime server")
    p.add_argument("--drain-seconds", type=float, default=2.0,
                   help="how long an old plan version stays for a job whose hosts never report "
                        "progress (jobs that report drain when every worker moved on)")
    p.add_argument("--reconcile-interval", type=float, default=10.0,
                   help="seconds between read-backs of every switch")
    add_metrics(p, default="127.0.0.1:0")
    p.add_argument("--web", metavar="HOST:PORT", default=None,
                   help="serve the live web view there (port 0: any free one, printed); off "
                        "loopback the --token-file and TLS rules of --listen apply")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=run)
