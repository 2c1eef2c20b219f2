"""One node of the real PS-balancing run: a worker and a PS in one process (Cai et al., 3.3).

Run inside the node's network namespace by the launcher (cluster.py).  Every iteration the
scheduler sends the slice plan; the worker pushes each slice to its PS (a probe slice is
preceded by a forecast message), the PS sums its slices from all workers plus its own and
returns them (pull), and the node reports the probe and data rates it measured as a receiver.
Per iteration: plan -> node starts its receivers -> "ready" -> scheduler's "go" -> push with
per-slice pull.  Every socket operation and wait has a timeout.
Wire: header (kind u8, iter u32, offset u64, length u32) + payload.
"""

from __future__ import annotations

import argparse
import json
import queue
import socket
import struct
import threading
import time
from collections.abc import Callable

import numpy as np

from host_stack.experiments.psbalance.probe import probe_rate

HEADER = struct.Struct("!BIQI")
FORECAST, PROBE, DATA, RESULT = 1, 2, 3, 4


def recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError("peer closed the connection")
        got += k
    return buf


def connect(addr: tuple[str, int], deadline: float, timeout: float) -> socket.socket:
    while True:
        try:
            sock = socket.create_connection(addr, timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class Node:
    """Worker + PS of node `me`; peers[j] = socket to j (outgoing: I am worker, j is PS)."""

    def __init__(self, me: int, n: int, addrs: list[str], port: int, timeout: float) -> None:
        self.me, self.n, self.timeout = me, n, timeout
        deadline = time.monotonic() + timeout
        listener = socket.create_server((addrs[me], port), backlog=n)
        listener.settimeout(timeout)
        self.to_ps: dict[int, socket.socket] = {}
        for j in range(n):
            if j != me:
                s = connect((addrs[j], port), deadline, timeout)
                s.sendall(struct.pack("!I", me))
                self.to_ps[j] = s
        self.from_worker: dict[int, socket.socket] = {}
        while len(self.from_worker) < n - 1:
            conn, _ = listener.accept()
            conn.settimeout(timeout)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.from_worker[struct.unpack("!I", recv_exact(conn, 4))[0]] = conn
        listener.close()
        self.started = threading.Event()

    def iteration(self, it: int, slices: list[list[int]], local: np.ndarray,
                  go: threading.Event) -> tuple[dict[str, float], dict[str, float]]:
        """Push/aggregate/pull one model; returns {sender: rate (bytes/s)} measured here for the
        probe and for everything the sender sent (from its first forecast to the last byte).

        Pull overlaps push per slice (the paper's Fig. 1): a PS returns a slice as soon as all
        workers' copies of it arrived.  Receivers are listening before `go` is set, so a probe's
        forecast is timed when it arrives, not when a late reader gets to it.
        """
        mine = [s for s in slices if s[2] == self.me]
        expected = sum(s[1] for s in mine)
        agg = local.copy()
        lock = threading.Lock()
        rates: dict[str, float] = {}
        data_rates: dict[str, float] = {}
        missing = {s[0]: self.n - 1 for s in mine}
        outbox: dict[int, queue.Queue[tuple[int, int]]] = {w: queue.Queue()
                                                            for w in self.from_worker}
        errors: list[BaseException] = []

        def guarded(fn: Callable[..., None]) -> Callable[..., None]:
            def run(*args: object) -> None:
                try:
                    fn(*args)
                except BaseException as exc:  # surfaced by the caller
                    errors.append(exc)
            return run

        @guarded
        def serve(w: int, conn: socket.socket) -> None:  # PS side: receive from worker w
            got, t_forecast, t_first = 0, None, None
            while got < expected:
                kind, _, off, length = HEADER.unpack(recv_exact(conn, HEADER.size))
                if kind == FORECAST:
                    t_forecast = time.monotonic()
                    t_first = t_first or t_forecast
                    continue
                data = np.frombuffer(recv_exact(conn, length), dtype=np.float32)
                if kind == PROBE and t_forecast is not None:
                    rates[str(w)] = probe_rate(length, t_forecast, time.monotonic())
                with lock:
                    agg[off // 4:(off + length) // 4] += data
                    missing[off] -= 1
                    if missing[off] == 0:
                        for box in outbox.values():
                            box.put((off, length))
                got += length
            if t_first is not None and got:  # data messages as probes (the paper, 3.2)
                data_rates[str(w)] = probe_rate(got, t_first, time.monotonic())

        @guarded
        def reply(w: int, conn: socket.socket) -> None:  # PS side: results to worker w
            for _ in mine:
                off, length = outbox[w].get(timeout=self.timeout)
                conn.sendall(HEADER.pack(RESULT, it, off, length)
                             + agg[off // 4:(off + length) // 4].tobytes())

        @guarded
        def push(j: int, sock: socket.socket) -> None:  # worker side: slices to PS j
            if not go.wait(self.timeout):
                raise TimeoutError("no go from the scheduler")
            for off, length, ps, probe in slices:
                if ps != j:
                    continue
                payload = local[off // 4:(off + length) // 4].tobytes()
                if probe:
                    sock.sendall(HEADER.pack(FORECAST, it, 0, 0))
                sock.sendall(HEADER.pack(PROBE if probe else DATA, it, off, length) + payload)

        @guarded
        def pull(j: int, sock: socket.socket) -> None:  # worker side: results from PS j
            want = sum(s[1] for s in slices if s[2] == j)
            while want > 0:
                kind, _, off, length = HEADER.unpack(recv_exact(sock, HEADER.size))
                result = np.frombuffer(recv_exact(sock, length), dtype=np.float32)
                if kind != RESULT:
                    raise ConnectionError(f"expected RESULT, got kind {kind}")
                local[off // 4:(off + length) // 4] = result / self.n  # the average
                want -= length

        threads = [threading.Thread(target=f, args=kv)
                   for f, conns in ((serve, self.from_worker), (reply, self.from_worker),
                                    (push, self.to_ps), (pull, self.to_ps))
                   for kv in conns.items()]
        for t in threads:
            t.start()
        self.started.set()
        deadline = time.monotonic() + self.timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if errors or any(t.is_alive() for t in threads):
            raise RuntimeError(f"node {self.me} iteration {it}: {errors or 'timed out'}")
        return rates, data_rates


def main() -> None:
    ap = argparse.ArgumentParser(description="one PS-balancing node (run by the launcher)")
    ap.add_argument("--id", type=int, required=True)
    ap.add_argument("--addrs", required=True, help="comma-separated node addresses")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ctrl", required=True, help="scheduler host:port")
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    addrs = args.addrs.split(",")
    host, port = args.ctrl.rsplit(":", 1)
    ctrl = connect((host, int(port)), time.monotonic() + args.timeout, args.timeout)
    node = Node(args.id, len(addrs), addrs, args.port, args.timeout)
    ctrl_file = ctrl.makefile("rwb")
    ctrl_file.write(json.dumps({"hello": args.id}).encode() + b"\n")
    ctrl_file.flush()
    rng = np.random.default_rng(args.id)
    local = np.zeros(0, dtype=np.float32)
    while True:
        line = ctrl_file.readline()
        if not line:
            return
        plan = json.loads(line)
        if plan.get("stop"):
            return
        if local.size * 4 != plan["model_bytes"]:
            local = rng.standard_normal(plan["model_bytes"] // 4, dtype=np.float32)
        go = threading.Event()
        node.started.clear()
        result: dict[str, object] = {}

        def work(plan: dict = plan, go: threading.Event = go, local: np.ndarray = local,
                 result: dict[str, object] = result) -> None:
            try:
                result["rates"], result["data_rates"] = node.iteration(
                    plan["iter"], plan["slices"], local, go)
            except Exception as exc:  # reported to the scheduler below
                result["error"] = f"{type(exc).__name__}: {exc}"

        worker = threading.Thread(target=work)
        worker.start()
        node.started.wait(args.timeout)
        ctrl_file.write(b'{"ready": true}\n')
        ctrl_file.flush()
        if json.loads(ctrl_file.readline() or b"{}").get("go"):
            go.set()
        worker.join(args.timeout)
        if "error" in result or worker.is_alive():
            raise SystemExit(f"node {args.id}: {result.get('error', 'iteration timed out')}")
        ctrl_file.write(json.dumps({"done": plan["iter"], "rates": result["rates"],
                                    "data_rates": result["data_rates"]}).encode() + b"\n")
        ctrl_file.flush()


if __name__ == "__main__":
    main()
