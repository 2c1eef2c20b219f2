"""The INA wire format (DESIGN.md section 3), in exactly one place.

Ethernet / IPv4 / UDP (dport 47000 gradients, 47001 results) / INA header / N x int32 payload,
all network byte order.  The host stack, the tests, the PTF suite and the embedded target all
build and parse INA packets through this module, so a change to the format is made here once.

Packing and unpacking are vectorised with numpy structured dtypes: a batch of packets is one
``(count, HEADER_LEN + 4 N)`` byte array, which is how the transport and the PS move many
chunks per call (host_stack/ina/batchio.py sends and receives such arrays).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

import numpy as np

GRAD_PORT = 47000
RESULT_PORT = 47001
DEFAULT_N = 32
MAX_WORKERS = 64

TYPE_GRAD = 1
TYPE_RESULT = 2
TYPE_ACK = 3
PACKET_TYPES = (TYPE_GRAD, TYPE_RESULT, TYPE_ACK)  # consecutive: parse_batch checks a range

# Control packets (type 3).  DESIGN.md leaves type 3 to the host stack; we put the operation
# in the ``slot`` field (switches never aggregate type 3, so slot has no other use there).
CTRL_HELLO = 1  # worker -> PS: "are you up for this job?"; round/chunk unused
CTRL_HELLO_REPLY = 2  # PS -> worker: answer to HELLO; ``count`` = number of workers it expects
CTRL_OVERFLOW_NACK = 3  # PS -> worker: the sum of (round, chunk) overflowed; resend it as RETX
CTRL_OPS = (CTRL_HELLO, CTRL_HELLO_REPLY, CTRL_OVERFLOW_NACK)

FLAG_RETX = 0x01
FLAG_AGGREGATED = 0x02
FLAG_OVERFLOW = 0x04
KNOWN_FLAGS = FLAG_RETX | FLAG_AGGREGATED | FLAG_OVERFLOW

HEADER_DTYPE = np.dtype(
    [
        ("type", "u1"),
        ("flags", "u1"),
        ("job", ">u2"),
        ("round", ">u4"),
        ("chunk", ">u4"),
        ("slot", ">u2"),
        ("count", ">u2"),
        ("bitmap", ">u8"),
    ]
)
HEADER_LEN = HEADER_DTYPE.itemsize  # 24 bytes
PAYLOAD_DTYPE = np.dtype(">i4")
# The same header as a struct, for the per-packet hot path of the transport and the PS: one
# ``unpack_from`` is several times cheaper than building a numpy record per packet.
HEADER_STRUCT = struct.Struct("!BBHIIHHQ")
assert HEADER_STRUCT.size == HEADER_LEN


class WireError(ValueError):
    """A packet that does not follow the INA format; the message names the field."""


@dataclass(frozen=True)
class InaHeader:
    """One INA header; field meanings are those of DESIGN.md section 3."""

    type: int
    job: int
    round: int
    chunk: int
    slot: int = 0
    count: int = 1
    bitmap: int = 0
    flags: int = 0

    def check(self) -> None:
        """Raise WireError naming the first field that is out of range."""
        limits = {"type": 8, "flags": 8, "job": 16, "round": 32, "chunk": 32, "slot": 16,
                  "count": 16, "bitmap": 64}
        for name, bits in limits.items():
            value = getattr(self, name)
            if not 0 <= value < (1 << bits):
                raise WireError(f"INA header field '{name}'={value} does not fit in {bits} bits")
        if self.type not in PACKET_TYPES:
            raise WireError(f"INA header field 'type'={self.type}: expected one of {PACKET_TYPES}")


def packet_len(n: int = DEFAULT_N) -> int:
    """Bytes of INA header plus payload for N values."""
    return HEADER_LEN + 4 * n


def pack(header: InaHeader, values: np.ndarray | list[int], n: int = DEFAULT_N) -> bytes:
    """Serialise one header and exactly N int32 values (the UDP payload)."""
    header.check()
    vals = np.asarray(values)
    if vals.shape != (n,):
        raise WireError(f"INA payload: expected {n} values, got shape {vals.shape}")
    lo, hi = vals.min(initial=0), vals.max(initial=0)
    if vals.dtype.kind not in "iu" or lo < -(2**31) or hi >= 2**31:
        raise WireError("INA payload: values must be integers that fit in int32")
    hdr = np.array(
        [(header.type, header.flags, header.job, header.round, header.chunk, header.slot,
          header.count, header.bitmap)],
        dtype=HEADER_DTYPE,
    )
    return hdr.tobytes() + vals.astype(PAYLOAD_DTYPE).tobytes()


def unpack(data: bytes, n: int = DEFAULT_N) -> tuple[InaHeader, np.ndarray]:
    """Parse one UDP payload into (header, int32 values); WireError if malformed."""
    if len(data) != packet_len(n):
        raise WireError(
            f"INA packet length {len(data)}: expected {packet_len(n)} "
            f"({HEADER_LEN}-byte header + {n} int32 values)"
        )
    rec = np.frombuffer(data, dtype=HEADER_DTYPE, count=1)[0]
    header = InaHeader(
        type=int(rec["type"]), flags=int(rec["flags"]), job=int(rec["job"]),
        round=int(rec["round"]), chunk=int(rec["chunk"]), slot=int(rec["slot"]),
        count=int(rec["count"]), bitmap=int(rec["bitmap"]),
    )
    if header.type not in PACKET_TYPES:
        raise WireError(f"INA header field 'type'={header.type}: expected one of {PACKET_TYPES}")
    if header.flags & ~KNOWN_FLAGS:
        raise WireError(f"INA header field 'flags'={header.flags:#x}: unknown bits set")
    values = np.frombuffer(data, dtype=PAYLOAD_DTYPE, offset=HEADER_LEN, count=n).astype(np.int32)
    return header, values


@functools.cache
def batch_dtype(n: int = DEFAULT_N) -> np.dtype:
    """Structured dtype of one whole INA packet (header + N values), for batch work."""
    return np.dtype([("hdr", HEADER_DTYPE), ("payload", PAYLOAD_DTYPE, (n,))])


def pack_batch(headers: np.ndarray, payloads: np.ndarray, n: int = DEFAULT_N) -> np.ndarray:
    """Pack many packets at once: headers (HEADER_DTYPE records), payloads (count, N) ints.

    Returns a ``(count, packet_len(n))`` uint8 array; row i is packet i's UDP payload.
    """
    if payloads.ndim != 2 or payloads.shape[1] != n or payloads.shape[0] != headers.shape[0]:
        raise WireError(
            f"INA batch: payloads shape {payloads.shape} does not match "
            f"{headers.shape[0]} headers of {n} values"
        )
    out = np.empty(headers.shape[0], dtype=batch_dtype(n))
    out["hdr"] = headers
    out["payload"] = payloads
    return out.view(np.uint8).reshape(headers.shape[0], packet_len(n))


def unpack_batch(buf: np.ndarray | bytes, n: int = DEFAULT_N) -> np.ndarray:
    """View equal-length packets (concatenated or as rows) as batch_dtype(n) records."""
    raw = np.frombuffer(buf, dtype=np.uint8) if isinstance(buf, bytes | bytearray) else buf
    if raw.size % packet_len(n):
        raise WireError(f"INA batch of {raw.size} bytes is not a multiple of {packet_len(n)}")
    return np.ascontiguousarray(raw).reshape(-1).view(batch_dtype(n))


def pack_raw(hdrs: np.ndarray, payload: np.ndarray) -> np.ndarray:
    """Like pack_batch, with the payloads already as (count, 4 N) big-endian bytes."""
    out = np.empty((hdrs.shape[0], HEADER_LEN + payload.shape[1]), dtype=np.uint8)
    out[:, :HEADER_LEN] = hdrs.view(np.uint8).reshape(-1, HEADER_LEN)
    out[:, HEADER_LEN:] = payload
    return out


def parse_batch(rows: np.ndarray, lens: np.ndarray, n: int = DEFAULT_N
                ) -> tuple[np.ndarray, np.ndarray]:
    """The batch form of parse_header: received packets as records, and which are valid.

    ``rows`` is a (count, packet_len(n)) uint8 array of received packets, ``lens`` their
    lengths; returns (batch_dtype(n) records viewing ``rows``, bool mask of the packets whose
    length, type and flags are right).
    """
    recs = records(rows, n)
    hdr = recs["hdr"]
    typ = hdr["type"]
    ok = ((lens == packet_len(n)) & (typ >= min(PACKET_TYPES)) & (typ <= max(PACKET_TYPES))
          & ((hdr["flags"] & np.uint8(~KNOWN_FLAGS & 0xFF)) == 0))
    return recs, ok


def records(rows: np.ndarray, n: int = DEFAULT_N) -> np.ndarray:
    """A (count, packet_len(n)) uint8 array of packets as batch_dtype(n) records (a view;
    nothing checked: parse_batch says which are valid)."""
    return rows.view(batch_dtype(n))[:, 0]


def take(recs: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``recs[idx]`` for ascending ``idx`` into a contiguous batch of records (parse_batch's),
    without numpy's gather of structured records, which costs about 0.1 us per record (35 us
    for a batch of 300, more than the rest of a receive): a view where ``idx`` is one run,
    else a gather of the rows as bytes."""
    if idx.size and int(idx[-1]) - int(idx[0]) + 1 == idx.size:
        return recs[int(idx[0]):int(idx[-1]) + 1]
    if not recs.flags.c_contiguous:
        return recs[idx]
    raw = recs.view(np.uint8).reshape(recs.shape[0], recs.dtype.itemsize)
    return raw[idx].view(recs.dtype)[:, 0]


def rank_bit(rank: int) -> int:
    """The bitmap bit of worker rank ``rank`` (0-based, at most 64 workers per job)."""
    if not 0 <= rank < MAX_WORKERS:
        raise WireError(f"worker rank {rank}: expected 0..{MAX_WORKERS - 1}")
    return 1 << rank


def parse_header(data: bytes | bytearray | memoryview, length: int, n: int = DEFAULT_N
                 ) -> tuple[int, int, int, int, int, int, int, int]:
    """Fast check of one received packet of ``length`` bytes in ``data``.

    Returns (type, flags, job, round, chunk, slot, count, bitmap); raises WireError naming the
    field when the length, type or flags are wrong.  The payload stays in ``data`` at offset
    HEADER_LEN so callers can view it with numpy without copying.
    """
    if length != packet_len(n):
        raise WireError(f"INA packet length {length}: expected {packet_len(n)}")
    fields = HEADER_STRUCT.unpack_from(data, 0)
    if fields[0] not in PACKET_TYPES:
        raise WireError(f"INA header field 'type'={fields[0]}: expected one of {PACKET_TYPES}")
    if fields[1] & ~KNOWN_FLAGS:
        raise WireError(f"INA header field 'flags'={fields[1]:#x}: unknown bits set")
    return fields


def payload_view(data: bytes | bytearray | memoryview, n: int = DEFAULT_N) -> np.ndarray:
    """The N big-endian int32 payload words of a packet in ``data`` (a view, no copy)."""
    return np.frombuffer(data, dtype=PAYLOAD_DTYPE, count=n, offset=HEADER_LEN)


def pack_fast(type_: int, flags: int, job: int, round_: int, chunk: int, slot: int, count: int,
              bitmap: int, payload_be: bytes) -> bytes:
    """Header fields + an already big-endian payload; no range checks (hot path only).

    Callers pass values they built themselves from validated state; struct still raises if a
    field does not fit its width.
    """
    return HEADER_STRUCT.pack(type_, flags, job, round_, chunk, slot, count, bitmap) + payload_be


def headers(count: int, type_: int, job: int, round_: int, chunks: np.ndarray,
            slots: np.ndarray, bitmap: int, flags: int = 0, contributions: int = 1
            ) -> np.ndarray:
    """HEADER_DTYPE records for a batch of packets that differ only in chunk and slot."""
    out = np.zeros(count, dtype=HEADER_DTYPE)
    out["type"], out["flags"], out["job"], out["round"] = type_, flags, job, round_
    out["chunk"], out["slot"], out["count"], out["bitmap"] = chunks, slots, contributions, bitmap
    return out
