"""Mutated and truncated frames never raise inside the engine (engine_error stays 0) and the
switch keeps forwarding good frames afterwards."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from emulation.targets.embedded.bench import aggregate_frames, forward_frames, program_updates
from emulation.targets.embedded.pipeline import Switch, load_program
from tests.embedded import handwritten as hw
from tests.embedded.test_stateful import s_frame
from tests.embedded.test_tables import t_frame


def mutated(good: list[bytes], count: int, flips: int, rng: random.Random) -> Iterator[bytes]:
    """``count`` frames: a good one with up to ``flips`` random bytes changed, cut short 30%
    of the time."""
    for _ in range(count):
        frame = bytearray(rng.choice(good))
        for _ in range(rng.randint(0, flips)):
            frame[rng.randrange(len(frame))] = rng.randrange(256)
        if rng.random() < 0.3:
            frame = frame[:rng.randrange(len(frame) + 1)]
        yield bytes(frame)


@pytest.mark.parametrize("name", ["forward", "aggregate", "stateful", "tables"])
def test_fuzzed_frames_are_handled(device: Any, name: str) -> None:
    dev = device(name)
    if name in ("forward", "aggregate"):
        dev.write(*program_updates(name, dev.p4info, 4))
    good = {"forward": forward_frames(4), "aggregate": aggregate_frames(2, 4, 32),
            "stateful": [s_frame(op, idx=op, val=op * 1000) for op in range(1, 9)],
            "tables": [t_frame(a=a, b=a * 7) for a in range(8)]}[name]
    rng = random.Random(7)
    for frame in mutated(good, 1500, 5, rng):
        dev.send(rng.randrange(1, 5), frame)
    assert dev.switch.drops["engine_error"] == 0
    assert dev.switch.stats["rx"] == 1500
    if name == "forward":
        assert dev.send(1, good[0])[0][0] == 2


@pytest.mark.parametrize("name", sorted(hw.PROGRAMS))
def test_fuzzed_frames_never_escape_the_handwritten_programs(name: str) -> None:
    """Stacks, unions, varbit options, error keys: mutated and cut frames are handled; only
    a run-time stack index outside the stack (bmv2 aborts there) may count engine_error."""
    sw = Switch(load_program(json.dumps(hw.PROGRAMS[name]())))
    good = hw.frames(name)
    for frame in mutated(good, 1000, 6, random.Random(11)):
        sw.process(1, frame)
    assert sw.stats["rx"] == 1000
    if name != "stacks":
        assert sw.drops["engine_error"] == 0
