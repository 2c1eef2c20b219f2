"""The delay line behind an emulated link's ``--reorder``: frames the link's nftables rule stole
to a hold veth (emulation/network/link_impair.py) are sent on the link's interface again ``delay``
after the kernel took them, marked so the rules let them pass; frames sent meanwhile overtake
them, as they overtake a frame netem delays.

One process per network namespace (a host's, or the root one for every switch port), started
and stopped by emulation/network/mininet_net.py:

    python -m emulation.network.hold_line --delay-ms 2 w1-eth0p=w1-eth0 [...]

The delay runs from the kernel's receive stamp (SO_TIMESTAMPNS), not from when this process
woke: on a loaded host a wake can be milliseconds late, and a delay counted from it would
hold frames longer than asked.  A frame is sent again as it was read, so its checksums must be
complete (the emulation's hosts compute theirs: checksum offload off); it leaves through the
link's shaping like any frame, by a worker's default class (the socket priority that picked
its pacing class is not in the frame), still within the link's rate.  On exit it prints what
it held, sent and failed to send as one JSON line.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import selectors
import signal
import socket
import struct
import sys
import time

from emulation.network.link_impair import MARK

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4  # sll_pkttype of a frame this host sent (the peer's own traffic)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
SO_MARK = getattr(socket, "SO_MARK", 36)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)  # root: past net.core.rmem_max
RCVBUF = 4 << 20  # held frames wait in the line, not in the socket: a burst must fit
FRAME = 65536
STAMP = struct.Struct("qq")


class Stop(Exception):
    """SIGTERM or SIGINT: a flag would not do, select() resumes after a handler returns."""


class HoldLine:
    """Reads stolen frames from each hold peer and sends each on its interface when due."""

    def __init__(self, pairs: list[tuple[str, str]], delay_s: float) -> None:
        self.delay_s = delay_s
        # select(2) waits to the microsecond; epoll and poll round a timeout up to the next
        # millisecond, which held frames 0.5 ms longer than asked on the median
        self.sel = selectors.SelectSelector()
        # (due, arrival number, socket, frame): frames of several hold peers, in due order
        self.queue: list[tuple[float, int, socket.socket, bytes]] = []
        self.arrivals = itertools.count()
        self.counts = {"held": 0, "sent": 0, "send_errors": 0}
        self.socks: list[socket.socket] = []
        for peer, interface in pairs:
            rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF)
            rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            rx.bind((peer, 0))
            rx.setblocking(False)
            tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            tx.setsockopt(socket.SOL_SOCKET, SO_MARK, MARK)
            tx.bind((interface, 0))
            tx.setblocking(False)
            self.socks += [rx, tx]
            self.sel.register(rx, selectors.EVENT_READ, tx)

    def run(self) -> None:
        """Take what arrived, send what is due; until a signal raises ``Stop``."""
        while True:
            timeout = None
            if self.queue:
                timeout = max(0.0, self.queue[0][0] - time.time())
            for key, _ in self.sel.select(timeout):
                self._take(key.fileobj, key.data)
            self.release(time.time())

    def _take(self, rx: socket.socket, tx: socket.socket) -> None:
        while True:
            try:
                frame, anc, _flags, addr = rx.recvmsg(FRAME, socket.CMSG_SPACE(STAMP.size))
            except (BlockingIOError, InterruptedError):
                return
            if addr[2] == PACKET_OUTGOING:
                continue
            stamp = time.time()
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = STAMP.unpack(data[:STAMP.size])
                    stamp = sec + nsec * 1e-9
            heapq.heappush(self.queue, (stamp + self.delay_s, next(self.arrivals), tx, frame))
            self.counts["held"] += 1

    def release(self, now: float) -> None:
        """Send every frame due by ``now``."""
        while self.queue and self.queue[0][0] <= now:
            _due, _n, tx, frame = heapq.heappop(self.queue)
            try:
                tx.send(frame)
                self.counts["sent"] += 1
            except OSError:  # a full queue on the link (ENOBUFS) drops it, as the link would
                self.counts["send_errors"] += 1

    def close(self) -> None:
        self.sel.close()
        for sock in self.socks:
            sock.close()


def pair(text: str) -> tuple[str, str]:
    """'PEER=INTERFACE' -> (PEER, INTERFACE)."""
    peer, sep, interface = text.partition("=")
    if not sep or not peer or not interface:
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOLD_PEER=INTERFACE")
    return peer, interface


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulation.network.hold_line",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("pairs", type=pair, nargs="+", metavar="HOLD_PEER=INTERFACE")
    args = parser.parse_args(argv)
    if not args.delay_ms > 0:
        parser.error(f"--delay-ms {args.delay_ms}: expected > 0")

    def finish(signum, _frame) -> None:
        # once: the emulation signals the process and its group, and a second Stop raised
        # while the first is handled would cut the summary short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Stop(f"signal {signum}")

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    try:
        line = HoldLine(args.pairs, args.delay_ms / 1000)
    except OSError as exc:
        print(f"hold_line: {exc}", file=sys.stderr)
        return 1
    print("ready", flush=True)
    try:
        line.run()
    except Stop:
        pass
    finally:
        line.release(float("inf"))  # what is held leaves now, late rather than lost
        line.close()
        print(json.dumps(line.counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
