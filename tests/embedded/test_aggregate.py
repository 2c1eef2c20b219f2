"""aggregate.p4 (N = 32) on the embedded target: slots in registers, completion, saturation,
collisions, counters."""

from __future__ import annotations

from typing import Any

import numpy as np

from emulation.targets.embedded.bench import PS_IP, ipv4_udp, program_updates
from host_stack.ina import wire

FAN_IN = 3


def grad(rank: int, values: list[int], chunk: int = 0, rnd: int = 1, slot: int = 0) -> bytes:
    h = wire.InaHeader(type=wire.TYPE_GRAD, job=1, round=rnd, chunk=chunk, slot=slot,
                       bitmap=wire.rank_bit(rank))
    return ipv4_udp(wire.pack(h, values), wire.GRAD_PORT, dst=PS_IP)


def agg_device(device: Any) -> Any:
    dev = device("aggregate")
    dev.write(*program_updates("aggregate", dev.p4info, FAN_IN))
    return dev


def test_fan_in_packets_give_one_sum(device: Any) -> None:
    dev = agg_device(device)
    vals = [list(range(r, r + 32)) for r in range(FAN_IN)]
    assert dev.send(1, grad(0, vals[0])) == []
    assert dev.send(1, grad(1, vals[1])) == []
    ((port, out),) = dev.send(1, grad(2, vals[2]))
    assert port == 2
    hdr, payload = wire.unpack(out[42:])
    assert hdr.count == FAN_IN and hdr.bitmap == 0b111 and hdr.flags & wire.FLAG_AGGREGATED
    assert np.array_equal(payload, np.sum(vals, axis=0))
    events = dev.program.res.counters["MyIngress.events"].packets
    assert events[:2] == [2, 1]
    # the slot is free again: the next chunk starts a fresh sum
    assert dev.send(1, grad(0, vals[0], chunk=1)) == []


def test_sums_saturate_at_int32_limits(device: Any) -> None:
    dev = agg_device(device)
    big = [2**31 - 10] * 32
    small = [-(2**31) + 5] * 32
    dev.send(1, grad(0, big))
    dev.send(1, grad(1, big))
    ((_, out),) = dev.send(1, grad(2, [1] * 32))
    assert list(wire.unpack(out[42:])[1]) == [2**31 - 1] * 32
    dev.send(1, grad(0, small, chunk=5, slot=1))
    dev.send(1, grad(1, small, chunk=5, slot=1))
    ((_, out),) = dev.send(1, grad(2, [0] * 32, chunk=5, slot=1))
    assert list(wire.unpack(out[42:])[1]) == [-(2**31)] * 32


def test_collision_is_forwarded_unaggregated(device: Any) -> None:
    dev = agg_device(device)
    dev.send(1, grad(0, [1] * 32, chunk=0))
    frame = grad(1, [2] * 32, chunk=9)  # same slot, other chunk, same round
    ((port, out),) = dev.send(1, frame)
    assert port == 2 and out == frame
    assert dev.program.res.counters["MyIngress.events"].packets[2] == 1
