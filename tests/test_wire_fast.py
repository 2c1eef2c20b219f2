"""The hot-path helpers of host_stack.ina.wire agree with the checked pack/unpack."""

import numpy as np
import pytest

from host_stack.ina import wire


def test_pack_fast_and_parse_header_match_pack_unpack():
    vals = np.arange(-16, 16, dtype=np.int32)
    fast = wire.pack_fast(wire.TYPE_RESULT, wire.FLAG_RETX, 3, 70000, 12, 5, 4, 0b1111,
                          vals.astype(">i4").tobytes())
    ref = wire.pack(wire.InaHeader(type=2, flags=1, job=3, round=70000, chunk=12, slot=5,
                                   count=4, bitmap=15), vals)
    assert fast == ref
    buf = bytearray(2048)
    buf[:len(fast)] = fast
    assert wire.parse_header(buf, len(fast)) == (2, 1, 3, 70000, 12, 5, 4, 15)
    np.testing.assert_array_equal(wire.payload_view(buf), vals)


@pytest.mark.parametrize("mutate,field", [(lambda b: b[:-1], "length"),
                                          (lambda b: b"\x09" + b[1:], "type"),
                                          (lambda b: b[:1] + b"\x40" + b[2:], "flags")])
def test_parse_header_names_the_bad_field(mutate, field):
    good = wire.pack(wire.InaHeader(type=1, job=0, round=0, chunk=0), np.zeros(32, np.int32))
    bad = mutate(good)
    with pytest.raises(wire.WireError, match=field):
        wire.parse_header(bad, len(bad))


def test_batch_headers_build_grad_packets():
    hdrs = wire.headers(3, wire.TYPE_GRAD, 9, 4, np.arange(3), np.arange(3) % 2, 1 << 5)
    rows = wire.pack_batch(hdrs, np.ones((3, 32), np.int32))
    h, v = wire.unpack(rows[2].tobytes())
    assert (h.type, h.job, h.round, h.chunk, h.slot, h.count, h.bitmap) == (1, 9, 4, 2, 0, 1, 32)
    assert v.tolist() == [1] * 32


def test_take_matches_fancy_indexing_of_records():
    """wire.take: recs[idx] as a view for a run, as a gather of bytes otherwise."""
    rows = wire.pack_batch(wire.headers(6, wire.TYPE_RESULT, 1, 2, np.arange(6), np.arange(6),
                                        1), np.arange(6 * 32, dtype=np.int32).reshape(6, 32))
    recs, _ = wire.parse_batch(rows, np.full(6, rows.shape[1]))
    for idx in ([1, 2, 3], [0, 2, 5], [4], []):
        idx = np.array(idx, dtype=np.int64)
        got = wire.take(recs, idx)
        assert got.dtype == recs.dtype and got.tobytes() == recs[idx].tobytes()
    assert wire.take(recs, np.array([1, 2]))["hdr"]["chunk"].tolist() == [1, 2]
    assert np.shares_memory(wire.take(recs, np.array([2, 3])), recs)  # a run: no copy
    strided = recs[::2]
    assert wire.take(strided, np.array([0, 2])).tobytes() == strided[[0, 2]].tobytes()
