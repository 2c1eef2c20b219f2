"""The Watch stream's hub: every message gets a sequence number, the last ones are kept so a
client that reconnects with ``since`` misses nothing, and each subscriber has its own queue.

The kept messages are also written to the service's store: a restarted service numbers on
from where it stopped and replays what it sent before, so ``since`` means the same across
restarts."""

from __future__ import annotations

import queue
import threading
import time
from collections import deque

from control_plane.service.proto import inart_controller_pb2 as pb
from control_plane.service.store import Store

KEEP = 1024  # messages kept for replay
QUEUE = 4096  # messages a slow subscriber may lag behind before it is dropped
CLOSED = None


class Subscription:
    """One Watch stream: messages of one job (and the network's) or of all jobs."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.queue: queue.Queue[pb.WatchEvent | None] = queue.Queue(QUEUE)
        self.closed = False

    def wants(self, event: pb.WatchEvent) -> bool:
        return self.job_id == 0 or event.job_id in (0, self.job_id)

    def offer(self, event: pb.WatchEvent | None) -> None:
        try:
            self.queue.put_nowait(event)
        except queue.Full:  # too slow: end its stream rather than grow without bound
            self.closed = True

    def next(self, timeout: float) -> pb.WatchEvent | None:
        """The next message, or None after ``timeout`` or once closed."""
        if self.closed:
            return CLOSED
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None


class Hub:
    """Publishes WatchEvents to subscribers."""

    def __init__(self, store: Store | None = None) -> None:
        self.lock = threading.Lock()
        self.store = store
        saved = store.watch_messages() if store is not None else []
        self.kept: deque[pb.WatchEvent] = deque(
            (pb.WatchEvent.FromString(raw) for _, raw in saved), maxlen=KEEP)
        self.seq = saved[-1][0] if saved else 0
        self.subs: list[Subscription] = []

    def publish(self, job_id: int = 0, **what: object) -> pb.WatchEvent:
        with self.lock:
            self.seq += 1
            event = pb.WatchEvent(seq=self.seq, time=time.time(), job_id=job_id, **what)
            self.kept.append(event)
            if self.store is not None:
                self.store.save_watch(self.seq, event.SerializeToString(), KEEP)
            for sub in self.subs:
                if sub.wants(event):
                    sub.offer(event)
        return event

    def subscribe(self, job_id: int, since: int) -> Subscription:
        sub = Subscription(job_id)
        with self.lock:
            for event in self.kept:
                if event.seq > since and sub.wants(event):
                    sub.offer(event)
            self.subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self.lock:
            if sub in self.subs:
                self.subs.remove(sub)
        sub.closed = True

    def close(self) -> None:
        """End every stream (the service stops)."""
        with self.lock:
            for sub in self.subs:
                sub.closed = True
                sub.offer(CLOSED)
            self.subs.clear()
