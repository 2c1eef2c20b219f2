import numpy as np
import pytest

from host_stack.ina import wire


def test_header_is_24_bytes_in_network_order():
    h = wire.InaHeader(type=wire.TYPE_GRAD, job=0x0102, round=0x03040506, chunk=7, slot=8,
                       count=9, bitmap=1 << 63, flags=wire.FLAG_RETX)
    data = wire.pack(h, np.arange(32), n=32)
    assert wire.HEADER_LEN == 24
    assert len(data) == 24 + 128
    assert data[:4] == bytes([1, 1, 1, 2])
    assert data[4:8] == bytes([3, 4, 5, 6])
    assert data[16:24] == (1 << 63).to_bytes(8, "big")
    assert data[24:28] == (0).to_bytes(4, "big") and data[-4:] == (31).to_bytes(4, "big")


def test_roundtrip_negative_values():
    h = wire.InaHeader(type=wire.TYPE_RESULT, job=1, round=2, chunk=3, count=4, bitmap=15)
    vals = np.array([-(2**31), -1, 0, 2**31 - 1] * 8)
    h2, v2 = wire.unpack(wire.pack(h, vals))
    assert h2 == h
    np.testing.assert_array_equal(v2, vals)


@pytest.mark.parametrize("field,value", [("job", 1 << 16), ("slot", -1), ("bitmap", 1 << 64)])
def test_out_of_range_field_is_named(field, value):
    kwargs = dict(type=1, job=0, round=0, chunk=0)
    kwargs[field] = value
    with pytest.raises(wire.WireError, match=field):
        wire.pack(wire.InaHeader(**kwargs), np.zeros(32, dtype=np.int32))


def test_bad_length_type_and_flags_rejected():
    good = wire.pack(wire.InaHeader(type=1, job=0, round=0, chunk=0), np.zeros(32, np.int32))
    with pytest.raises(wire.WireError, match="length"):
        wire.unpack(good[:-1])
    with pytest.raises(wire.WireError, match="type"):
        wire.unpack(bytes([9]) + good[1:])
    with pytest.raises(wire.WireError, match="flags"):
        wire.unpack(good[:1] + bytes([0x80]) + good[2:])
    with pytest.raises(wire.WireError, match="int32"):
        wire.pack(wire.InaHeader(type=1, job=0, round=0, chunk=0), np.full(32, 2**31))


def test_batch_matches_single_packets():
    n = 8
    hdrs = np.zeros(3, dtype=wire.HEADER_DTYPE)
    hdrs["type"] = wire.TYPE_GRAD
    hdrs["chunk"] = [0, 1, 2]
    payload = np.arange(24).reshape(3, n)
    rows = wire.pack_batch(hdrs, payload, n=n)
    for i in range(3):
        h, v = wire.unpack(rows[i].tobytes(), n=n)
        assert h.chunk == i
        np.testing.assert_array_equal(v, payload[i])
    back = wire.unpack_batch(rows.tobytes(), n=n)
    np.testing.assert_array_equal(back["payload"], payload)
    with pytest.raises(wire.WireError):
        wire.unpack_batch(rows.tobytes()[:-1], n=n)
