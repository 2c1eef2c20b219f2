"""Frame I/O on Linux interfaces through raw AF_PACKET sockets.

One thread polls every port's socket, drains up to BURST frames from each ready one, runs the
batch through the switch under the switch lock (the P4Runtime server takes the same lock, once
per batch rather than per frame) and sends the results, every frame for one port with one
``sendmmsg`` (rawio.py).  Our own transmissions are not received back (PACKET_IGNORE_OUTGOING,
and the pkttype is checked).
Frames lost at the ports are counted in the switch's drops (pipeline.DROP_REASONS), those the
kernel dropped for a full receive buffer when ``poll_overflow`` asks it.
"""

from __future__ import annotations

import logging
import selectors
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable

from emulation.targets.embedded.rawio import Sender

log = logging.getLogger("inart.embedded.ports")

ETH_P_ALL = 0x0003
SOL_PACKET = 263  # not exported by the socket module
PACKET_IGNORE_OUTGOING = 23
PACKET_STATISTICS = 6  # struct tpacket_stats {u32 tp_packets; u32 tp_drops}, reset by reading
PACKET_OUTGOING = 4
MAX_FRAME = 65535
BURST = 64  # frames drained per socket per wake-up
Frames = list[tuple[int, bytes]]
RCVBUF = 4 << 20  # absorb bursts while Python works through a backlog


def open_port(iface: str) -> socket.socket:
    """A non-blocking raw socket bound to ``iface`` that sees every frame on it.

    Opened with protocol 0 (receives nothing) and given ETH_P_ALL only in ``bind``: a socket
    opened with ETH_P_ALL captures every interface's frames until it is bound, and the switch
    would take a frame of another interface (loopback, another switch's port) as its own.
    """
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:  # kernels before 4.20: filtered by pkttype below
        pass
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    s.bind((iface, ETH_P_ALL))  # sockaddr_ll: Python converts to network order
    s.setblocking(False)
    return s


def ignores_outgoing(s: socket.socket) -> bool:
    """Whether the kernel keeps our own transmissions off this socket (Linux >= 4.20)."""
    try:
        return bool(s.getsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING))
    except OSError:
        return False


class PortLoop:
    """Receive/process/transmit loop over a set of ``port number -> interface`` bindings."""

    def __init__(self, ports: dict[int, str], process: Callable[[Frames], Frames],
                 lock: threading.Lock, drops: Counter[str]) -> None:
        self.ports = ports
        self.process = process
        self.lock = lock
        self.drops = drops
        self.socks = {num: open_port(iface) for num, iface in ports.items()}
        self.senders = {num: Sender(s) for num, s in self.socks.items()}
        self.sel = selectors.DefaultSelector()
        for num, s in self.socks.items():
            self.sel.register(s, selectors.EVENT_READ, (num, ignores_outgoing(s)))
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True, name="embedded-ports")

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self.stop_event.set()
        if self.thread.ident is not None:  # started
            self.thread.join(timeout)
        with self.lock:
            self.poll_overflow()
        for s in self.socks.values():
            s.close()
        self.sel.close()

    def poll_overflow(self) -> None:
        """Add the frames the kernel dropped since the last poll because a port's receive
        buffer was full (the switch fell behind); call it holding the switch lock."""
        for s in self.socks.values():
            try:
                _, dropped = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
            except OSError:  # closed while stopping
                continue
            self.drops["rx_overflow"] += dropped

    def handle(self, port: int, frame: bytes) -> None:
        """Run one received frame through the switch and send what it emits."""
        self.handle_batch([(port, frame)])

    def handle_batch(self, frames: Frames) -> None:
        """Run received (port, frame)s through the switch and send what they emit."""
        with self.lock:
            outputs = self.process(frames)
        by_port: dict[int, list[bytes]] = {}
        for out_port, out_frame in outputs:
            by_port.setdefault(out_port, []).append(out_frame)
        for out_port, out_frames in by_port.items():
            sender = self.senders.get(out_port)
            if sender is None:
                self.drops["no_such_port"] += len(out_frames)
                continue
            failed = sender.send(out_frames)
            if failed:
                self.drops["tx_error"] += failed
                log.debug("send on port %d refused %d frames", out_port, failed)

    def run(self) -> None:
        while not self.stop_event.is_set():
            batch: Frames = []
            for key, _ in self.sel.select(timeout=0.2):
                (port, clean), s = key.data, key.fileobj
                try:
                    if clean:  # recv: no address to build, a third of recvfrom's cost
                        recv = s.recv
                        for _ in range(BURST):
                            batch.append((port, recv(MAX_FRAME)))
                    else:
                        for _ in range(BURST):
                            frame, addr = s.recvfrom(MAX_FRAME)
                            if addr[2] != PACKET_OUTGOING:
                                batch.append((port, frame))
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as exc:
                    self.drops["rx_error"] += 1
                    log.warning("receive on port %d failed: %s", port, exc)
            if batch:
                self.handle_batch(batch)
