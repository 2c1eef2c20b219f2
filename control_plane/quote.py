"""Bounded quoting of caller-supplied text in error messages.

An error message that echoes what a caller sent (a node id, a switch address, a node kind) must
stay small whatever was sent: gRPC carries the message in its trailing metadata, and a 1 MiB id
quoted whole turns a clear INVALID_ARGUMENT into RESOURCE_EXHAUSTED ("metadata size exceeds
hard limit") on the client.  Every message that quotes input goes through ``quote``.
"""

from __future__ import annotations

QUOTE_LIMIT = 64  # characters of a quoted value shown
MESSAGE_LIMIT = 2048  # characters of a whole message (a last bound, for messages built elsewhere)


def quote(value: object, limit: int = QUOTE_LIMIT, bare: bool = False) -> str:
    """``repr(value)`` (``str`` with ``bare``) cut to ``limit`` characters of the value; a
    longer one ends with ``...`` and its length, so the caller still sees what was wrong."""
    if isinstance(value, str) and len(value) > limit:
        head = value[:limit] if bare else repr(value[:limit])
        return f"{head}... ({len(value)} characters)"
    text = str(value) if bare else repr(value)
    return text if len(text) <= limit + 2 else f"{text[:limit]}... ({len(text)} characters)"


def clip(message: str, limit: int = MESSAGE_LIMIT) -> str:
    """``message`` bounded to ``limit`` characters."""
    return message if len(message) <= limit else f"{message[:limit]}... (cut)"
