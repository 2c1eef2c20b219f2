"""Batched UDP I/O for the INA worker and PS: one system call per batch, never per packet.

``sendmmsg``/``recvmmsg`` through a small C extension (host_stack/ina/_batchio.c, built by
``./dev.sh setup``; setup.py).  Chosen over AF_PACKET rings and io_uring: the INA endpoints
are ordinary UDP sockets (loopback, veth, real NICs, Mininet hosts) that must keep the
kernel's IP/UDP demultiplexing, checksums and routing, which AF_PACKET bypasses, and io_uring
needs liburing plus a kernel that allows it; ``recvmmsg``/``sendmmsg`` already cut the Python
and syscall cost per packet to a fraction of the kernel's own UDP path (README: transport).

Packets are rows of numpy uint8 arrays; addresses are IPv4 integers and ports (host order),
so whole batches go in and out without building a Python object per packet.
"""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass

import numpy as np

from host_stack.ina.addresses import Address
from host_stack.ina.impair import ImpairedSocket
from host_stack.ina.native import _batchio

# Datagrams per UDP GSO message, used only towards 127.0.0.0/8: there no switch can be on the
# path (a P4 switch reading frames off a veth would get one large GSO frame, not the
# datagrams), and the kernel takes a batch of equal datagrams through its stack at once.
GSO_SEGMENTS = 64
GSO_BYTES = 65507  # a GSO send is one UDP datagram to the kernel: at most this much payload
GSO_MODES = ("loopback", "all", "off")
RECV_MESSAGES = 256  # messages per recvmmsg: 256 datagrams, or up to 256 GSO batches
SOL_UDP, UDP_GRO = 17, 104  # <netinet/udp.h>; not in Python's socket module
# bytes asked per socket (the kernel doubles it): 8 MiB queued 20,164 datagrams of 152 bytes
# on loopback, 16 MiB over 40,000, room for every worker's window (transport.PS_QUEUE)
SOCKET_BUFFER = 16 * 1024 * 1024


def ipv4(host: str) -> int:
    """An IPv4 address (or resolvable name) as a host-order integer."""
    return int.from_bytes(socket.inet_aton(socket.gethostbyname(host)), "big")


def dotted(ip: int) -> str:
    return socket.inet_ntoa(int(ip).to_bytes(4, "big"))


def make_socket(bind: Address) -> socket.socket:
    """A non-blocking UDP socket with large buffers, bound to ``bind``.

    As root the buffers may exceed net.core.rmem_max/wmem_max (SO_*BUFFORCE): Debian's
    default 208 KiB holds only a few hundred datagrams, fewer than one round's window from
    every worker, and each overflow is a loss that costs a retransmission.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    set_buffers(sock, SOCKET_BUFFER)
    sock.bind(bind)
    sock.setblocking(False)
    return sock


def set_buffers(sock: socket.socket, size: int) -> None:
    """Receive and send buffers of ``size`` bytes, past the system's maximum as root."""
    for force, opt in ((33, socket.SO_RCVBUF), (32, socket.SO_SNDBUF)):  # SO_*BUFFORCE
        try:
            sock.setsockopt(socket.SOL_SOCKET, force, size)
        except PermissionError:
            sock.setsockopt(socket.SOL_SOCKET, opt, size)


@dataclass
class SendResult:
    """What one ``send`` did: ``done`` rows handed over or failed (``errors`` of them), the
    rest (from ``done`` on) left because the socket's send buffer was full."""

    done: int
    errors: int
    last_errno: int


class BatchSocket:
    """A UDP socket (or an ImpairedSocket around one) that moves packets in batches.

    ``recv`` fills ``data`` (rows of ``row_len`` bytes), ``lens``, ``ips`` and ``ports``;
    a datagram longer than ``row_len`` reports ``row_len + 1`` so callers can reject it.
    Through an ImpairedSocket (tests, ``--impair``) each batch's fates are drawn at once and
    what goes now still goes as one batch; arrivals held back come out of ``recv`` when due,
    after what arrived with them.
    ``gso`` says where UDP GSO is used: ``loopback`` (towards 127.0.0.0/8 only), ``all``
    (every destination: only where no software switch reads the frames off a veth) or ``off``.
    """

    def __init__(self, sock: socket.socket | ImpairedSocket, row_len: int,
                 batch: int = RECV_MESSAGES, gso: str = "loopback",
                 also: socket.socket | None = None) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.also = also  # a receive-only socket read after ``sock`` (result_group.join)
        self.fds = [self.fd] if also is None else [self.fd, also.fileno()]
        self.row_len = row_len
        # room for a whole GSO batch in every message: 64 small datagrams, fewer large ones
        self.segs_in = max(1, min(GSO_SEGMENTS, 65535 // row_len))
        rows = batch * self.segs_in
        self.data = np.zeros((rows, row_len), dtype=np.uint8)
        self.lens = np.zeros(rows, dtype=np.int32)
        self.ips = np.zeros(rows, dtype=np.uint32)
        self.ports = np.zeros(rows, dtype=np.uint16)
        self.impaired = isinstance(sock, ImpairedSocket)
        # reordering alone leaves sends alone: no fates drawn, no per-row addresses built
        self.send_impaired = self.impaired and sock.imp.on_send
        # arrivals held back (reordering): kernel stamps, and the injector on every receive
        self.reordering = self.impaired and bool(sock.imp.reorder)
        self.stamps = np.zeros(rows, dtype=np.float64) if self.reordering else None
        if gso not in GSO_MODES:
            raise ValueError(f"gso={gso!r}: expected one of {', '.join(GSO_MODES)}")
        self.gso_everywhere = gso == "all"
        # segments per GSO send: 64 small packets, fewer large ones (64 of 1 kB would pass
        # GSO_BYTES, the kernel would refuse every batch, and sends would fall to one packet
        # each); 1 once the kernel refused GSO
        self.gso_segs = 1 if gso == "off" else max(1, min(GSO_SEGMENTS, GSO_BYTES // row_len))
        try:  # take GSO batches whole; without it the kernel splits them on arrival
            self.fileno_socket().setsockopt(SOL_UDP, UDP_GRO, 1)
        except OSError:
            pass

    def fileno_socket(self) -> socket.socket:
        """The real socket (under an ImpairedSocket too)."""
        return self.sock.sock if self.impaired else self.sock

    def fileno(self) -> int:
        return self.fd

    def wait_limit(self, timeout: float) -> float:
        """``timeout``, shortened to when an ImpairedSocket's earliest held arrival is due, so
        a select() of that long wakes in time to deliver it."""
        if not self.reordering:
            return timeout
        return max(0.0, min(timeout, self.sock.next_due() - time.monotonic()))

    def has_due(self) -> bool:
        """Whether ``recv`` has held arrivals to deliver now (an ImpairedSocket's)."""
        return self.reordering and self.sock.next_due() <= time.monotonic()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until ``recv`` has something; whether it has."""
        timeout = max(0.0, timeout)
        if self.reordering:
            left = self.sock.next_due() - time.monotonic()
            if left <= 0:
                return True
            timeout = min(timeout, left)
        ready, _, _ = select.select(self.fds, [], [], timeout)
        return bool(ready) or self.has_due()

    def send(self, rows: np.ndarray, idx: np.ndarray, ips: np.ndarray, ports: np.ndarray
             ) -> SendResult:
        """Send rows[idx[i]] to (ips[i], ports[i]); ips/ports may have one entry for all."""
        idx = np.ascontiguousarray(idx, dtype=np.int64)
        if not idx.size:
            return SendResult(0, 0, 0)
        ips = np.ascontiguousarray(ips, dtype=np.uint32)
        ports = np.ascontiguousarray(ports, dtype=np.uint16)
        rows = np.ascontiguousarray(rows, dtype=np.uint8)
        if not self.send_impaired:
            return self._send(rows, idx, ips, ports)
        if ips.size == 1:
            ips, ports = np.repeat(ips, idx.size), np.repeat(ports, idx.size)
        now = self.sock.fates(idx.size)
        res = self._send(rows, idx[now], ips[now], ports[now])
        # a send-buffer stop: the caller retries from the first row that did not go
        done = idx.size if res.done == now.size else int(now[res.done])
        return SendResult(done, res.errors, res.last_errno)

    def _send(self, rows: np.ndarray, idx: np.ndarray, ips: np.ndarray, ports: np.ndarray
              ) -> SendResult:
        if not idx.size:
            return SendResult(0, 0, 0)
        segs = self.gso_segs if self.gso_everywhere or ((ips >> 24) == 127).all() else 1
        done, errors, last_errno, kept = _batchio.send(self.fd, rows, rows.shape[1], idx, ips,
                                                       ports, segs)
        if kept < segs:
            self.gso_segs = 1
        return SendResult(done, errors, last_errno)

    def recv(self) -> int:
        """Receive what is waiting (up to one batch) without blocking; the count: from the
        socket, else from the ``also`` socket.  Through an ImpairedSocket that reorders, the
        same C call holds the drawn arrivals back and appends the held ones now due."""
        for fd in self.fds:
            if k := self._recv(fd):
                return k
        return 0

    def _recv(self, fd: int) -> int:
        if not self.reordering:
            return _batchio.recv(fd, self.data, self.row_len, self.segs_in, self.lens,
                                 self.ips, self.ports)
        imp = self.sock
        while (k := _batchio.recv(fd, self.data, self.row_len, self.segs_in, self.lens,
                                  self.ips, self.ports, self.stamps, imp.queue,
                                  imp.imp.delay_s)) < 0:
            imp.make_room(self.data.shape[0], self.row_len)  # rare: a new draw, a full queue
        return k

    def sendto(self, data: bytes, addr: Address) -> None:
        """One packet (control traffic); errors are the caller's to count."""
        self.sock.sendto(data, addr)

    def close(self) -> None:
        self.sock.close()
        if self.also is not None:
            self.also.close()
