"""Serve one Prometheus registry on ``/metrics``, over TCP or a Unix socket, and scrape one.

TCP (``HOST:PORT``, port 0: any free one) is what Prometheus scrapes.  A Unix socket
(``unix:PATH``) is what an emulation's processes use: Mininet hosts live in network
namespaces of their own, which no TCP address of the emulating process reaches, but they
share its file system (the controller service reaches them the same way).  A port that is
taken is refused with the process that holds it, never a bare ``Address already in use``.
"""

from __future__ import annotations

import errno
import http.client
import socket
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from control_plane.localhost import AddressError, port_holder, split_address

UNIX = "unix:"
SCRAPE_TIMEOUT_S = 5.0


class MetricsError(ValueError):
    """A metrics address that cannot be served or scraped; the message says why."""


class _Handler(BaseHTTPRequestHandler):
    """GET /metrics: the registry's exposition; anything else 404."""

    registry: CollectorRegistry

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404, "only /metrics here")
            return
        body = generate_latest(self.registry)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def address_string(self) -> str:  # a Unix peer has no (host, port)
        return str(self.client_address[0]) if self.client_address else "unix"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
        return


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def tcp_server(cls: type[ThreadingHTTPServer], host: str, port: int,
               handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """``cls`` bound to (host, port), over IPv6 where ``host`` is an IPv6 address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return type(cls.__name__, (cls,), {"address_family": family})((host, port), handler)


def bind_error(address: str, exc: OSError) -> MetricsError:
    """``exc`` from binding ``address``, as a message naming who holds a taken port."""
    if exc.errno == errno.EADDRINUSE and not address.startswith(UNIX):
        port = int(address.rpartition(":")[2])
        return MetricsError(f"cannot listen on {address}: port {port} is in use by "
                            f"{port_holder(port)}; give another address (port 0: any free)")
    return MetricsError(f"cannot listen on {address}: {exc.strerror or exc}")


def check_address(address: str) -> None:
    """Refuse (MetricsError) what is neither HOST:PORT nor unix:PATH, before any work."""
    if address.startswith(UNIX):
        if not address[len(UNIX):]:
            raise MetricsError(f"{address}: expected unix:PATH")
        return
    try:
        split_address(address, any_port=True)
    except AddressError as exc:
        raise MetricsError(str(exc)) from None


class MetricsServer:
    """``/metrics`` of ``registry`` on ``address``, in daemon threads until ``close``."""

    def __init__(self, address: str, registry: CollectorRegistry) -> None:
        handler = type("Handler", (_Handler,), {"registry": registry})
        self.path: Path | None = None
        try:
            if address.startswith(UNIX):
                self.path = Path(address[len(UNIX):])
                if self.path.is_socket():  # a previous run's, left behind
                    self.path.unlink()
                self.server: socketserver.BaseServer = _UnixServer(str(self.path), handler)
                self.address = address
            else:
                host, port = split_address(address, any_port=True)
                server = tcp_server(ThreadingHTTPServer, host, port, handler)
                server.daemon_threads = True
                self.server = server
                shown = f"[{host}]" if ":" in host else host
                self.address = f"{shown}:{server.server_address[1]}"
        except AddressError as exc:
            raise MetricsError(str(exc)) from None
        except OSError as exc:
            raise bind_error(address, exc) from None
        self.thread = threading.Thread(target=self.server.serve_forever, name="metrics",
                                       daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        """Where to scrape it (a Unix socket: ``unix:PATH``, as ``scrape`` takes it)."""
        return self.address if self.path else f"http://{self.address}/metrics"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self.path is not None:
            try:
                self.path.unlink()
            except OSError:
                pass


def start(address: str | None, registry: CollectorRegistry) -> MetricsServer | None:
    """A started server, or None when ``address`` is None (metrics off)."""
    return None if address is None else MetricsServer(address, registry)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def scrape_text(address: str, timeout: float = SCRAPE_TIMEOUT_S) -> str:
    """The exposition text at ``address`` (``HOST:PORT``, ``http://...`` or ``unix:PATH``)."""
    if address.startswith(UNIX):
        conn: http.client.HTTPConnection = _UnixConnection(address[len(UNIX):], timeout)
    else:
        hostport = address.removeprefix("http://").split("/")[0]
        host, port = split_address(hostport)
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", "/metrics")
        reply = conn.getresponse()
        body = reply.read().decode()
    except (OSError, http.client.HTTPException) as exc:  # refused, timed out, cut short
        raise MetricsError(f"scrape {address}: {type(exc).__name__}: {exc}") from None
    finally:
        conn.close()
    if reply.status != 200:
        raise MetricsError(f"scrape {address}: HTTP {reply.status}")
    return body


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value of an exposition text."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scrape(address: str, timeout: float = SCRAPE_TIMEOUT_S
           ) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The samples at ``address``."""
    return samples(scrape_text(address, timeout))


def value(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
          **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in found.items() if n == name and want <= set(ls))

