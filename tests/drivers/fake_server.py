"""What the tests' fake gRPC servers share: a loopback server on a free port that records
every request, started and stopped as a context manager."""

from __future__ import annotations

import threading
from concurrent import futures

import grpc

from control_plane.drivers.streams import CHANNEL_OPTIONS


class FakeServer:
    """Subclasses register their handlers on ``self.server`` and append to ``requests``."""

    def __init__(self) -> None:
        self.requests: list = []
        self.lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                                  options=CHANNEL_OPTIONS)

    def listen(self) -> None:
        """Bind a free loopback port (after the handlers are added)."""
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.stop(grace=None)

    def of(self, kind) -> list:
        """The recorded requests of one message type, in arrival order."""
        return [r for r in self.requests if isinstance(r, kind)]
