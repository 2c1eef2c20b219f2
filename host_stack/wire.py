"""The INA wire format (DESIGN.md section 3), in exactly one place.

Ethernet / IPv4 / UDP (dport 47000 gradients, 47001 results) / INA header / N x int32 payload,
all network byte order.  The host stack, the tests, the PTF suite and the embedded target all
build and parse INA packets through this module, so a change to the format is made here once.

Packing and unpacking are vectorised with numpy structured dtypes: a batch of packets is one
``(count, HEADER_LEN + 4 N)`` byte array, which is how the transport moves many chunks per call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GRAD_PORT = 47000
RESULT_PORT = 47001
DEFAULT_N = 32
MAX_WORKERS = 64

TYPE_GRAD = 1
TYPE_RESULT = 2
TYPE_ACK = 3
PACKET_TYPES = (TYPE_GRAD, TYPE_RESULT, TYPE_ACK)

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


def rank_bit(rank: int) -> int:
    """The bitmap bit of worker rank ``rank`` (0-based, at most 64 workers per job)."""
    if not 0 <= rank < MAX_WORKERS:
        raise WireError(f"worker rank {rank}: expected 0..{MAX_WORKERS - 1}")
    return 1 << rank
