"""The two halves of a bidirectional gRPC stream that both drivers keep: requests fed from a
queue, responses (or the RpcError that ended the stream) pumped into another by a thread."""

from __future__ import annotations

import queue
from collections.abc import Iterable, Iterator

import grpc

# A Tofino pipeline config (tofino.bin + context.json + bfrt.json) is several MiB, more than
# gRPC's default 4 MiB per message; reading it back must not fail either.
MAX_MESSAGE = 256 * 1024 * 1024
# A refused Write's per-update errors come back packed in the grpc-status-details-bin trailer:
# a refused batch of a hundred updates with the switch's messages is more than gRPC's default
# 16 KiB of metadata, which would replace them all with "received metadata size exceeds hard
# limit" (the SDE's own BF Runtime client allows 1 GiB).
MAX_METADATA = 64 * 1024 * 1024
CHANNEL_OPTIONS = (("grpc.max_receive_message_length", MAX_MESSAGE),
                   ("grpc.max_send_message_length", MAX_MESSAGE),
                   ("grpc.max_metadata_size", MAX_METADATA))


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
