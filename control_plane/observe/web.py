"""The live web view: one page (vendored HTML, JS and SVG, no CDN, no build step) and its
data, served by the standard library's ThreadingHTTPServer.

    GET /               the page (static/index.html), /static/NAME its script and style
    GET /api/state      the current document (control_plane/observe/view.py), as JSON
    GET /api/events     server-sent events: ``event: state`` with the document, at once and
                        whenever it changes (the page never reloads)

Read-only: nothing here changes the service or the emulation.  Loopback by default; any
other address needs a token (``Authorization: Bearer T``, or ``?token=T``, which the page
passes on because EventSource cannot set headers) and TLS unless ``insecure``: the service's
own rules (control_plane/service/auth.py).

One thread polls the source every ``interval_s`` while a stream is open (nobody watching
costs nothing) and hands a changed document to each client's queue without waiting; a
client whose queue is full (it stopped reading) is dropped, and a write that blocks past
WRITE_TIMEOUT_S ends that client only, so no client can stall the source, the others or the
service.
"""

from __future__ import annotations

import errno
import hmac
import json
import queue
import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from control_plane.localhost import AddressError, port_holder, split_address
from control_plane.observe.exporter import tcp_server
from control_plane.service.auth import check_listen

Source = Callable[[], dict[str, Any]]
STATIC = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
          "style.css": "text/css; charset=utf-8"}
CLIENT_QUEUE = 8  # documents a client may lag behind before it is dropped
MAX_CLIENTS = 32
WRITE_TIMEOUT_S = 5.0
KEEPALIVE_S = 15.0
REQUEST_TIMEOUT_S = 30.0


class WebError(ValueError):
    """A web view that cannot be served as asked; the message says why."""


def static_file(name: str) -> bytes:
    return resources.files("control_plane.observe").joinpath("static", name).read_bytes()


class Client:
    """One /api/events stream: its bounded queue and its connection."""

    def __init__(self, conn: socket.socket) -> None:
        self.queue: queue.Queue[bytes | None] = queue.Queue(CLIENT_QUEUE)
        self.conn = conn
        self.dropped = False

    def offer(self, data: bytes) -> None:
        try:
            self.queue.put_nowait(data)
        except queue.Full:  # it stopped reading: end it rather than wait or grow
            self.drop()

    def drop(self) -> None:
        self.dropped = True
        try:
            self.conn.shutdown(socket.SHUT_RDWR)  # its blocked write, if any, fails now
        except OSError:
            pass


class Broadcaster:
    """Polls the source; the latest document and every client's share of the changes."""

    def __init__(self, source: Source, interval_s: float) -> None:
        self.source, self.interval_s = source, interval_s
        self.lock = threading.Lock()
        self.clients: list[Client] = []
        self.latest = self._read()
        self.dropped = 0  # clients dropped for not reading
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="web-view", daemon=True)
        self.thread.start()

    def _read(self) -> bytes:
        """The source's document as strict JSON (a NaN raises here, not in the page)."""
        return json.dumps(self.source(), separators=(",", ":"), allow_nan=False).encode()

    @staticmethod
    def _changed(old: bytes, new: bytes) -> bool:
        """Whether anything but the document's clock moved."""
        def strip(raw: bytes) -> dict:
            doc = json.loads(raw)
            doc.pop("time", None)
            return doc
        return old != new and strip(old) != strip(new)

    def _loop(self) -> None:
        while not self.stopping.wait(self.interval_s):
            if not self.clients:  # nobody watches: reading the source would be waste
                continue
            try:
                doc = self._read()
            except Exception:  # noqa: BLE001 - a failed read is retried next tick
                continue
            with self.lock:
                changed = self._changed(self.latest, doc)
                self.latest = doc
                clients = list(self.clients)
            if changed:
                for client in clients:
                    client.offer(doc)
                    if client.dropped:
                        self.remove(client, dropped=True)

    def current(self) -> bytes:
        """The latest document, read now when no stream keeps it fresh."""
        if not self.clients:
            doc = self._read()
            with self.lock:
                self.latest = doc
        with self.lock:
            return self.latest

    def add(self, conn: socket.socket) -> Client | None:
        with self.lock:
            if len(self.clients) >= MAX_CLIENTS:
                return None
            client = Client(conn)
            self.clients.append(client)
            client.offer(self.latest)
            return client

    def remove(self, client: Client, dropped: bool = False) -> None:
        with self.lock:
            if client in self.clients:
                self.clients.remove(client)
                self.dropped += dropped

    def close(self) -> None:
        self.stopping.set()
        with self.lock:
            clients = list(self.clients)
        for client in clients:
            try:
                client.queue.put_nowait(None)  # ends its stream
            except queue.Full:
                client.drop()


class Handler(BaseHTTPRequestHandler):
    """The routes; ``view`` is set on the subclass each server makes."""

    view: WebView
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_TIMEOUT_S  # a client that connects and says nothing ties up no thread

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
        return

    def _allowed(self) -> bool:
        token = self.view.token
        if token is None:
            return True
        given = self.headers.get("Authorization", "")
        if given.startswith("Bearer "):
            given = given[len("Bearer "):]
        else:
            given = parse_qs(urlsplit(self.path).query).get("token", [""])[0]
        return hmac.compare_digest(given.encode(), token.encode())

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not self._allowed():
            self._send(401, b"missing or wrong token (Authorization: Bearer T, or ?token=T)\n",
                       "text/plain")
            return
        path = urlsplit(self.path).path
        if path == "/":
            self._send(200, static_file("index.html"), STATIC["index.html"])
        elif path.startswith("/static/") and path[len("/static/"):] in STATIC:
            name = path[len("/static/"):]
            self._send(200, static_file(name), STATIC[name])
        elif path == "/api/state":
            self._send(200, self.view.broadcaster.current(), "application/json")
        elif path == "/api/events":
            self._events()
        else:
            self._send(404, b"not found\n", "text/plain")

    def _events(self) -> None:
        client = self.view.broadcaster.add(self.connection)
        if client is None:
            self._send(503, b"too many open views\n", "text/plain")
            return
        self.connection.settimeout(WRITE_TIMEOUT_S)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.close_connection = True
        try:
            while not client.dropped:
                try:
                    data = client.queue.get(timeout=KEEPALIVE_S)
                except queue.Empty:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    continue
                if data is None:
                    break
                self.wfile.write(b"event: state\ndata: " + data + b"\n\n")
                self.wfile.flush()
        except OSError:  # it went away, or stopped reading past the write timeout
            pass
        finally:
            self.view.broadcaster.remove(client, dropped=client.dropped)


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def check_address(address: str, token: str | None = None, tls: bool = False,
                  insecure: bool = False) -> tuple[str, int]:
    """(host, port) of a web view address, or WebError: a HOST:PORT, on loopback unless the
    service's rules for another address are met (control_plane/service/auth.py)."""
    if address.startswith("unix:"):
        raise WebError(f"--web {address}: expected HOST:PORT (a browser opens it)")
    try:
        check_listen(address, token, tls, insecure, option="--web")
        return split_address(address, any_port=True)
    except (AddressError, ValueError) as exc:
        raise WebError(str(exc)) from None


class WebView:
    """The web view of ``source`` on ``address``, in daemon threads until ``close``."""

    def __init__(self, address: str, source: Source, token: str | None = None,
                 cert: str | None = None, key: str | None = None, insecure: bool = False,
                 interval_s: float = 0.5) -> None:
        host, port = check_address(address, token, cert is not None, insecure)
        self.token = token
        handler = type("Handler", (Handler,), {"view": self})
        try:
            self.server = tcp_server(_Server, host, port, handler)
        except OSError as exc:
            holder = (f"in use by {port_holder(port)}" if exc.errno == errno.EADDRINUSE
                      else exc.strerror)
            raise WebError(f"--web: cannot listen on {address}: {holder}; give another address "
                           f"(port 0: any free)") from None
        if cert is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            try:
                context.load_cert_chain(cert, key)
            except (OSError, ssl.SSLError) as exc:
                self.server.server_close()
                raise WebError(f"TLS: {exc}") from None
            # the handshake in the client's own thread, not in the accept loop, so a client
            # that connects and says nothing holds up no one else
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True,
                                                     do_handshake_on_connect=False)
        self.broadcaster = Broadcaster(source, interval_s)
        shown = f"[{host}]" if ":" in host else host
        scheme = "https" if cert is not None else "http"
        self.url = f"{scheme}://{shown}:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, name="web",
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.broadcaster.close()
        self.server.shutdown()
        self.server.server_close()
