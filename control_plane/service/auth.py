"""Who may talk to the service: loopback by default, a bearer token over TLS anywhere else.

`inart serve` listens on 127.0.0.1 unless told otherwise.  Listening on any other address
needs ``--token-file``: every request must then carry ``authorization: Bearer <token>``
metadata, checked by ``TokenInterceptor`` before any handler runs (requests without it get
UNAUTHENTICATED).  It also needs TLS (``--tls-cert/--tls-key``), which keeps the token and
the plans off the wire, unless the user explicitly says ``--insecure`` (a trusted network
only: anyone on the path reads the token and can then replay it).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from pathlib import Path

import grpc

from control_plane.localhost import AddressError, is_loopback
from control_plane.localhost import split_address as host_port
from control_plane.quote import quote

HEADER = "authorization"
SCHEME = "Bearer "


class AuthConfigError(ValueError):
    """A listen address, token or certificate that cannot be used; the message says why."""


def split_address(address: str, any_port: bool = False) -> tuple[str, int]:
    """localhost.split_address, raising AuthConfigError."""
    try:
        return host_port(address, any_port)
    except AddressError as exc:
        raise AuthConfigError(str(exc)) from None


def read_token(path: str | Path) -> str:
    try:
        token = Path(path).read_text().strip()
    except OSError as exc:
        raise AuthConfigError(f"token file {path}: {exc.strerror}") from None
    if len(token) < 16 or any(c.isspace() for c in token):
        raise AuthConfigError(f"token file {path}: expected one token of >= 16 characters "
                              f"without spaces")
    return token


def check_listen(address: str, token: str | None, tls: bool = False,
                 insecure: bool = False, option: str = "--listen") -> None:
    """Refuse a non-loopback listen address without a token, and without TLS unless
    ``insecure`` (the user's explicit choice).  A Unix socket (``unix:PATH``) is local like
    loopback, and also reachable from the network namespaces of one machine (an emulation's
    hosts), which loopback is not."""
    if address.startswith("unix:"):
        if not address[len("unix:"):].lstrip("/"):
            raise AuthConfigError(f"{option} {quote(address)}: expected unix:PATH")
        return
    host, _ = split_address(address, any_port=True)
    if is_loopback(host):
        return
    if token is None:
        raise AuthConfigError(f"{option} {quote(address)}: not a loopback address; listening "
                              f"there needs --token-file (requests must carry a bearer token)")
    if not tls and not insecure:
        raise AuthConfigError(f"{option} {quote(address)}: not a loopback address; listening "
                              f"there needs TLS (--tls-cert and --tls-key) so the token does "
                              f"not cross the network in clear, or --insecure to accept that")


def server_credentials(cert: str | None, key: str | None) -> grpc.ServerCredentials | None:
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise AuthConfigError("TLS needs both --tls-cert and --tls-key")
    try:
        pair = (Path(key).read_bytes(), Path(cert).read_bytes())
    except OSError as exc:
        raise AuthConfigError(f"TLS: {exc.filename}: {exc.strerror}") from None
    return grpc.ssl_server_credentials([pair])


class TokenInterceptor(grpc.ServerInterceptor):
    """Lets a request through only with the right bearer token."""

    def __init__(self, token: str) -> None:
        self.expected = (SCHEME + token).encode()

    def _valid(self, metadata: tuple) -> bool:
        for key, value in metadata or ():
            if key == HEADER:
                given = value.encode() if isinstance(value, str) else value
                return hmac.compare_digest(given, self.expected)
        return False

    def intercept_service(self, continuation: Callable, details: grpc.HandlerCallDetails):
        handler = continuation(details)
        if handler is None or self._valid(details.invocation_metadata):
            return handler
        why = f"{details.method}: missing or wrong '{HEADER}: Bearer <token>' metadata"

        def deny(_request: object, context: grpc.ServicerContext) -> None:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, why)

        if handler.response_streaming:
            return grpc.unary_stream_rpc_method_handler(deny)
        return grpc.unary_unary_rpc_method_handler(deny)
