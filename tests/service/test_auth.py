"""Loopback by default; off loopback only with a token (UNAUTHENTICATED without it); TLS."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys

import grpc
import pytest

from control_plane.repo import REPO, child_env
from control_plane.service.auth import AuthConfigError, check_listen, read_token
from control_plane.service.client import Client
from tests.service.conftest import start_service

TOKEN = "s3cret-token-0123456789"


def outside_address() -> str | None:
    """This machine's first non-loopback IPv4 address (`hostname -I`), if it has one."""
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True,
                             timeout=5).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    for addr in out:
        if "." in addr and not addr.startswith("127."):
            try:
                with socket.socket() as s:
                    s.bind((addr, 0))
                return addr
            except OSError:
                continue
    return None


OUTSIDE = outside_address()
needs_outside = pytest.mark.skipif(OUTSIDE is None, reason="this machine has no non-loopback "
                                   "IPv4 address to listen on (hostname -I)")


def test_listening_off_loopback_needs_a_token_and_tls(tmp_path) -> None:
    check_listen("127.0.0.1:50070", None)
    check_listen("localhost:1", None)
    check_listen("[::1]:1", None)
    for addr in ("0.0.0.0:50070", "192.0.2.7:1", "[::]:5", "example.org:80"):
        with pytest.raises(AuthConfigError, match="needs --token-file"):
            check_listen(addr, None)
        with pytest.raises(AuthConfigError, match=r"needs TLS \(--tls-cert and --tls-key\)"):
            check_listen(addr, TOKEN)
        check_listen(addr, TOKEN, tls=True)
        check_listen(addr, TOKEN, insecure=True)
    with pytest.raises(AuthConfigError, match="expected HOST:PORT with a port"):
        check_listen("127.0.0.1:²", None)
    (tmp_path / "short").write_text("abc\n")
    with pytest.raises(AuthConfigError, match=">= 16 characters"):
        read_token(tmp_path / "short")
    proc = subprocess.run([sys.executable, "-m", "control_plane.cli", "serve", "--listen",
                           "0.0.0.0:0", "--state", str(tmp_path / "s"), "--switches", "memory"],
                          capture_output=True, text=True, timeout=60, cwd=REPO, env=child_env())
    assert proc.returncode == 2 and "needs --token-file" in proc.stdout


@needs_outside
def test_requests_off_localhost_without_the_token_are_unauthenticated(tmp_path) -> None:
    svc = start_service(tmp_path / "s", listen=f"{OUTSIDE}:0", token=TOKEN)
    try:
        assert svc.client.jobs() == []  # the fixture's client carries the token
        for token in (None, "wrong-token-0123456789"):
            with Client(svc.address, token) as c:
                for call in (c.jobs, c.topology, lambda: c.plan(1),  # noqa: B023
                             lambda: next(iter(c.watch()))):  # noqa: B023
                    with pytest.raises(grpc.RpcError) as info:
                        call()
                    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        svc.stop()


@needs_outside
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_tls_with_a_token(tmp_path) -> None:
    from control_plane.service.auth import server_credentials
    from control_plane.service.controller import Controller
    from control_plane.service.server import build_server

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=inart", "-addext", f"subjectAltName=IP:{OUTSIDE}",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    plain = start_service(tmp_path / "s")  # only to build a controller the same way
    plain.server.stop(0).wait()
    controller: Controller = plain.controller
    server, port = build_server(controller, f"{OUTSIDE}:0", TOKEN,
                                server_credentials(str(cert), str(key)))
    try:
        with Client(f"{OUTSIDE}:{port}", TOKEN, tls_ca=cert) as c:
            assert c.jobs() == []
        with Client(f"{OUTSIDE}:{port}", None, tls_ca=cert) as c, \
                pytest.raises(grpc.RpcError) as info:
            c.jobs()
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with Client(f"{OUTSIDE}:{port}", TOKEN, timeout=5) as c, \
                pytest.raises(grpc.RpcError) as info:
            c.jobs()  # plaintext against a TLS port
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop(0).wait()
        plain.client.close()
        controller.stop()


def self_signed(tmp_path) -> tuple[str, str]:
    """A key and a self-signed certificate for 127.0.0.1 (openssl)."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=inart", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return str(key), str(cert)


def inart(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", *args],
                          capture_output=True, text=True, timeout=120, cwd=REPO, env=child_env())


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_off_loopback_serve_speaks_tls_unless_told_insecure(tmp_path) -> None:
    from tests.foreground import inart_foreground

    key, cert = self_signed(tmp_path)
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    serve = ("serve", "--listen", "0.0.0.0:0", "--token-file", str(token), "--switches",
             "memory", "--state", str(tmp_path / "s"))
    plain = inart(*serve)
    assert plain.returncode == 2 and "needs TLS (--tls-cert and --tls-key)" in plain.stdout
    with inart_foreground(*serve, "--insecure") as line:
        assert "TLS: no" in line, line
    with inart_foreground(*serve, "--tls-cert", cert, "--tls-key", key) as line:
        assert "TLS: yes" in line, line
        server = f"127.0.0.1:{line.split('listening on ')[1].split(' ')[0].rpartition(':')[2]}"
        ok = inart("ctl", "jobs", "--address", server, "--token-file", str(token),
                   "--tls-ca", cert)
        assert ok.returncode == 0 and ok.stdout.strip() == "no jobs", ok.stderr
        clear = inart("ctl", "jobs", "--address", server, "--token-file", str(token),
                      "--timeout", "5")
        assert clear.returncode == 1 and "UNAVAILABLE" not in clear.stderr
        assert f"no `inart serve` answers at {server}" in clear.stderr
        assert "give --tls-ca" in clear.stderr
        missing = inart("ctl", "jobs", "--address", server, "--tls-ca", str(tmp_path / "no.pem"))
        assert missing.returncode == 2 and "--tls-ca" in missing.stderr
