"""Differential test: the same P4Runtime writes and frames through bmv2's simple_switch_grpc
(on veths) and through the embedded target; every output frame must be identical, byte for
byte, on the same port.  Our compiled test programs (the reach_*.p4 ones too: stacks,
unions, varbit, const entries) and the testbed's program go through P4Runtime; the
hand-written programs of the target's reach (handwritten.py: stacks, unions, varbit, const
entries, error keys, value sets) need no entries and are given to bmv2 on its command line.
Skipped where bmv2 or root is missing."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from control_plane.drivers.p4runtime import (
    P4RuntimeClient,
    build_table_entry,
    multicast_group_update,
    table_update,
)
from emulation.targets import SwitchProcess, get_target
from emulation.targets.base import SwitchSpec
from emulation.targets.bmv2 import Bmv2Target
from emulation.targets.embedded import bench
from emulation.targets.embedded.bench import (
    PS_IP,
    free_port,
    ipv4_udp,
    program_updates,
    start_switch,
)
from emulation.targets.embedded.p4runtime_server import apply_updates, local_device
from emulation.targets.embedded.pipeline import Switch, load_program
from host_stack.netns import can_create_veths, veth_pairs
from tests.embedded import handwritten
from tests.embedded.conftest import compiled
from tests.embedded.test_aggregate import grad
from tests.embedded.test_stateful import s_frame
from tests.embedded.test_tables import t_frame
from tests.embedded.test_veth import raw_socket

NPORTS = 4
REASON = can_create_veths() or get_target("bmv2").unavailable()
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def forward_case(p4info: Any) -> tuple[list[Any], list[tuple[int, bytes]]]:
    te = build_table_entry(p4info, "MyIngress.route", {"hdr.ipv4.dst_addr": (0x0A000000, 8)},
                           "MyIngress.forward", {"port": 2, "dmac": 0x0A0B0C0D0E0F})
    frames = [(1, ipv4_udp(bytes([i]) * 30, 5000 + i, dst=0x0A000000 + i)) for i in range(5)]
    bad = bytearray(frames[0][1])
    bad[24] ^= 0xFF
    frames += [(1, bytes(bad)), (3, ipv4_udp(b"x", 1, dst=0x0B000001)),
               (1, bytes(12) + b"\x86\xdd" + bytes(40))]
    return [table_update(te)], frames


def tables_case(p4info: Any) -> tuple[list[Any], list[tuple[int, bytes]]]:
    E = lambda *a, **k: table_update(build_table_entry(p4info, *a, **k))  # noqa: E731
    ups = [
        E("MyIngress.t_exact", {"hdr.t.a": 7, "hdr.t.d": 0xABC}, "MyIngress.set_exact", {"v": 4}),
        E("MyIngress.t_lpm", {"hdr.t.c": (0x0A000000, 8)}, "MyIngress.set_lpm", {"v": 1}),
        E("MyIngress.t_lpm", {"hdr.t.c": (0x0A010000, 16)}, "MyIngress.set_lpm", {"v": 2}),
        E("MyIngress.t_ternary", {"hdr.t.b": (0x1200, 0xFF00), "hdr.t.e": 1},
          "MyIngress.set_ternary", {"v": 1}, priority=10),
        E("MyIngress.t_ternary", {"hdr.t.b": (0x1234, 0xFFFF), "hdr.t.e": 1},
          "MyIngress.set_ternary", {"v": 2}, priority=20),
        E("MyIngress.t_range", {"hdr.t.b": (100, 200)}, "MyIngress.set_range", {"v": 1},
          priority=1),
        E("MyIngress.t_range", {"hdr.t.b": (150, 300)}, "MyIngress.set_range", {"v": 2},
          priority=5),
        E("MyIngress.t_optional", {"hdr.t.a": 5}, "MyIngress.set_optional", {"v": 1},
          priority=1),
        E("MyIngress.t_switch", {"hdr.t.a": 1}, "MyIngress.mark_a"),
        E("MyIngress.t_switch", {"hdr.t.a": 2}, "MyIngress.mark_b"),
    ]
    frames = [(3, t_frame(a=a, b=b, c=c, d=d, e=e)) for a, b, c, d, e in (
        (7, 0x1234, 0x0A010203, 0xABC, 1), (1, 120, 0x0A020000, 0, 1), (5, 160, 0, 0xABC, 2),
        (2, 0x1299, 0x0A010000, 1, 1), (0x15, 250, 0x0B000000, 2, 3), (0x25, 400, 0, 3, 15))]
    return ups, frames


def stateful_case(p4info: Any) -> tuple[list[Any], list[tuple[int, bytes]]]:
    frames = [(4, s_frame(1, idx=3, val=40)), (4, s_frame(1, idx=3, val=2)),
              (4, s_frame(2, idx=0x42, val=0xDEADBEEF)), (4, s_frame(3, val=5, sval=-5)),
              (4, s_frame(3, val=0x20000000, sval=0x20000000)),
              (4, s_frame(4, idx=9)), (4, s_frame(5, extra=b"\x33\x44") + b"tail"),
              (4, s_frame(6, val=200)), (4, s_frame(7)),
              (4, s_frame(8, val=0xF1234567, sval=-20)),
              (4, s_frame(1, idx=1, val=1, marker=True)), (4, s_frame(0xEE) + b"zz"),
              (4, bytes.fromhex("0000000000aa0000000000bb88b6010203"))]
    return [multicast_group_update(9, [(2, 200), (1, 100), (3, 300)])], frames


def aggregate_case(p4info: Any) -> tuple[list[Any], list[tuple[int, bytes]]]:
    frames = [(1, grad(r, [r * 1000 + i for i in range(32)], chunk=c, slot=c))
              for c in range(3) for r in range(4)]
    frames += [(1, grad(0, [2**31 - 10] * 32, chunk=7, slot=7)),
               (1, grad(1, [2**31 - 10] * 32, chunk=7, slot=7)),
               (1, grad(0, [1] * 32, chunk=8, slot=7)),
               (1, ipv4_udp(b"plain", 5000, dst=PS_IP))]
    return program_updates("aggregate", p4info, 4), frames


def ina_case(p4info: Any) -> tuple[list[Any], list[tuple[int, bytes]]]:
    """The testbed's own program (p4src/build): aggregation, duplicates, RETX, routing."""
    frames = [(1, f) for f in bench.aggregate_frames(3, 4, 32)]
    dup = bench.aggregate_frames(1, 2, 32)[0]
    frames += [(1, dup), (1, dup), (1, ipv4_udp(b"plain", 5000, dst=PS_IP))]
    return program_updates("ina", p4info, 4), frames


def reach_case(name: str) -> Callable[[Any], tuple[list[Any], list[tuple[int, bytes]]]]:
    """A p4c-compiled reach program (tests/embedded/p4/reach_*.p4): const entries only."""
    return lambda p4info: ([], [(1, f) for f in handwritten.compiled_frames(name)])


CASES: dict[str, Callable[[Any], tuple[list[Any], list[tuple[int, bytes]]]]] = {
    "forward": forward_case, "tables": tables_case, "stateful": stateful_case,
    "aggregate": aggregate_case, "ina": ina_case,
    **{n: reach_case(n) for n in ("reach_stacks", "reach_unions", "reach_varbit",
                                  "reach_tables")},
}


def program(name: str) -> tuple[bytes, Any]:
    if name == "ina":
        if not (bench.INA_DIR / "inart.json").exists():
            pytest.skip(f"{bench.INA_DIR}/inart.json not built")
        return bench.load_build("ina")
    return compiled(name)


def collect(socks: dict[int, socket.socket], quiet: float = 0.25, expect: int = 0,
            patience: float = 5.0) -> list[tuple[int, bytes]]:
    """Frames until the ports have been quiet for `quiet` seconds; while fewer than `expect`
    (what the embedded target put out) have come, wait up to `patience` instead, since a
    loaded CI machine can delay bmv2's multicast replication past the quiet window."""
    out: list[tuple[int, bytes]] = []
    by_fd = {s.fileno(): (port, s) for port, s in socks.items()}
    deadline = time.monotonic() + patience
    while True:
        wait = quiet if len(out) >= expect else max(quiet, deadline - time.monotonic())
        ready, _, _ = select.select(list(by_fd), [], [], wait)
        if not ready:
            return sorted(out)
        for fd in ready:
            port, s = by_fd[fd]
            out.append((port, s.recv(65535)))


def exchange(pairs: list[tuple[str, str]], frames: list[tuple[int, bytes]],
             expected: list[list[tuple[int, bytes]]]) -> list[list[tuple[int, bytes]]]:
    """Send each frame into its port's veth and collect what every port puts out for it
    (waiting longer for frames the embedded target put out, see collect)."""
    socks = {i + 1: raw_socket(a) for i, (a, _) in enumerate(pairs)}
    try:
        time.sleep(0.3)
        collect(socks, 0.2)
        results = []
        for (in_port, frame), want in zip(frames, expected, strict=True):
            socks[in_port].send(frame)
            results.append(collect(socks, expect=len(want)))
        return results
    finally:
        for s in socks.values():
            s.close()


def bmv2_outputs(name: str, updates: list[Any], frames: list[tuple[int, bytes]],
                 expected: list[list[tuple[int, bytes]]], tag: str
                 ) -> list[list[tuple[int, bytes]]]:
    config, p4info = program(name)
    with veth_pairs(f"id{tag}", NPORTS) as pairs:
        port = free_port()
        switch = start_switch("bmv2", [b for _, b in pairs], port)
        try:
            with P4RuntimeClient(f"127.0.0.1:{port}", timeout=30) as client:
                client.set_pipeline(p4info, config)
                client.write(updates)
            return exchange(pairs, frames, expected)
        finally:
            switch.stop()


@pytest.mark.parametrize("name", sorted(CASES))
def test_embedded_matches_bmv2_byte_for_byte(name: str) -> None:
    config, p4info = program(name)
    updates, frames = CASES[name](p4info)
    switch, servicer = local_device(config, p4info.proto)
    apply_updates(servicer, *updates)
    embedded = [sorted((p, f) for p, f in switch.process(port, frame) if 1 <= p <= NPORTS)
                for port, frame in frames]
    bmv2 = bmv2_outputs(name, updates, frames, embedded, f"{free_port() % 1000}")
    for i, (want, got) in enumerate(zip(bmv2, embedded, strict=True)):
        assert got == want, f"frame {i} of {name}: bmv2 {want} != embedded {got}"
    # the comparison must be about real traffic, not two silent switches
    assert sum(map(len, bmv2)) >= 3, f"{name}: bmv2 sent too little: {bmv2}"


class Bmv2WithConfig(Bmv2Target):
    """bmv2 started with a JSON program on its command line instead of --no-p4."""

    def __init__(self, config: Path) -> None:
        self.config = config

    def command(self, spec: SwitchSpec) -> list[str]:
        cmd = super().command(spec)
        cmd[cmd.index("--no-p4")] = str(self.config)
        return cmd


def bmv2_outputs_of(doc: dict[str, Any], frames: list[tuple[int, bytes]],
                    expected: list[list[tuple[int, bytes]]], tag: str,
                    tmp: Path) -> list[list[tuple[int, bytes]]]:
    config = tmp / "program.json"
    config.write_text(json.dumps(doc))
    with veth_pairs(f"ih{tag}", NPORTS) as pairs:
        spec = SwitchSpec(0, {i + 1: b for i, (_, b) in enumerate(pairs)},
                          f"127.0.0.1:{free_port()}", log_level="error")
        with SwitchProcess(Bmv2WithConfig(config), spec):
            return exchange(pairs, frames, expected)


@pytest.mark.parametrize("name", sorted(handwritten.PROGRAMS))
def test_handwritten_program_matches_bmv2(name: str, tmp_path: Path) -> None:
    doc = handwritten.PROGRAMS[name]()
    frames = [(1, f) for f in handwritten.frames(name)]
    switch = Switch(load_program(json.dumps(doc)))
    embedded = [sorted((p, f) for p, f in switch.process(port, frame) if 1 <= p <= NPORTS)
                for port, frame in frames]
    bmv2 = bmv2_outputs_of(doc, frames, embedded, f"{free_port() % 1000}", tmp_path)
    mismatches = [f"frame {i} {frames[i][1].hex()}:\n  bmv2     {want}\n  embedded {got}"
                  for i, (want, got) in enumerate(zip(bmv2, embedded, strict=True))
                  if got != want]
    assert not mismatches, f"{name}: {len(mismatches)} of {len(frames)} differ\n" + \
        "\n".join(mismatches[:6])
    assert sum(map(len, bmv2)) >= len(frames) // 2, f"{name}: bmv2 sent too little"
