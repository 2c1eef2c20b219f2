"""The two halves of a bidirectional gRPC stream that both drivers keep: requests fed from a
queue, responses (or the RpcError that ended the stream) pumped into another by a thread."""

from __future__ import annotations

import queue
from collections.abc import Iterable, Iterator

import grpc


def queue_iter(requests: queue.Queue) -> Iterator:
    """Yield queued requests until a None ends the stream from our side."""
    while True:
        item = requests.get()
        if item is None:
            return
        yield item


def pump(stream: Iterable, responses: queue.Queue) -> None:
    """Move every response into ``responses``; a stream error goes there too, last."""
    try:
        for msg in stream:
            responses.put(msg)
    except grpc.RpcError as exc:
        responses.put(exc)
