"""The switch targets' one interface: command lines, bmv2 discovery, and a standalone switch
started by `inart switch` that a P4Runtime client programs."""

from __future__ import annotations

import os
import re
import socket
import time
from pathlib import Path

import pytest

from control_plane.deploy.pipeline import pipeline_for
from control_plane.drivers.p4runtime import P4RuntimeClient
from control_plane.localhost import free_port
from emulation.targets import SwitchProcess, SwitchSpec, TargetError, get_target
from emulation.targets.bmv2 import build_kind, find_bmv2
from tests.foreground import inart_foreground


def test_bmv2_is_found_through_the_one_variable(tmp_path, monkeypatch) -> None:
    fake = tmp_path / "bin" / "simple_switch_grpc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("INART_BMV2", str(fake))
    assert find_bmv2() == fake
    assert get_target("bmv2").unavailable() is None
    monkeypatch.setenv("INART_BMV2", str(tmp_path / "missing"))
    assert find_bmv2() is None
    assert "INART_BMV2" in get_target("bmv2").unavailable()


def test_bmv2_build_kind_read_from_its_config_header(tmp_path) -> None:
    binary = tmp_path / "bin" / "simple_switch_grpc"
    (tmp_path / "include" / "bm").mkdir(parents=True)
    binary.parent.mkdir()
    binary.write_text("")
    assert build_kind(binary) == "unknown"
    header = tmp_path / "include" / "bm" / "config.h"
    header.write_text("#define BM_LOG_DEBUG_ON 1\n#define BM_ELOG_ON 1\n")
    assert build_kind(binary).startswith("default")
    header.write_text("/* #undef BM_LOG_DEBUG_ON */\n/* #undef BM_ELOG_ON */\n")
    assert build_kind(binary).startswith("performance")


def test_targets_share_one_command_line_shape(monkeypatch, tmp_path) -> None:
    fake = tmp_path / "simple_switch_grpc"
    fake.write_text("#!/bin/sh\necho usage\n")
    fake.chmod(0o755)
    monkeypatch.setenv("INART_BMV2", str(fake))
    spec = SwitchSpec(3, {2: "b", 1: "a"}, "127.0.0.1:50001")
    tail = ["--", "--grpc-server-addr", "127.0.0.1:50001"]
    for name in ("embedded", "bmv2"):
        cmd = get_target(name).command(spec)
        assert cmd[-3:] == tail
        assert cmd[cmd.index("--device-id") + 1] == "3"
        assert "--no-p4" in cmd
        i = cmd.index("-i")
        assert cmd[i:i + 4] == ["-i", "1@a", "-i", "2@b"]
    with pytest.raises(TargetError, match="expected one of embedded, bmv2"):
        get_target("tofu")


def test_switch_process_reports_an_early_exit(tmp_path) -> None:
    log = tmp_path / "switch.log"
    bad = SwitchSpec(0, {1: "no-such-iface0"}, f"127.0.0.1:{free_port()}")
    switch = SwitchProcess(get_target("embedded"), bad, log=log)
    with pytest.raises(TargetError, match="before its P4Runtime server came up"):
        switch.__enter__()
    assert switch.proc is not None and switch.proc.poll() is not None


def test_a_switch_refuses_an_address_another_process_serves(tmp_path) -> None:
    """Else the readiness check would take the other server's answer for the new switch's
    (a switch left over from a killed run answered an emulation's P4Runtime writes)."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        spec = SwitchSpec(0, {}, f"127.0.0.1:{other.getsockname()[1]}")
        switch = SwitchProcess(get_target("embedded"), spec, log=tmp_path / "switch.log")
        with pytest.raises(TargetError, match=rf"already in use by pid {os.getpid()} \(.*python"):
            switch.start()
        assert switch.proc is None


@pytest.mark.parametrize("name", ["embedded", "bmv2"])
def test_standalone_switch_from_the_cli_takes_a_pipeline(name: str) -> None:
    reason = get_target(name).unavailable()
    if reason:
        pytest.skip(reason)
    grpc = f"127.0.0.1:{free_port()}"
    with inart_foreground("switch", "--target", name, "--listen", grpc, stop_timeout=20) as line:
        assert "ready" in line and grpc in line, line
        pipeline = pipeline_for(name)
        # connect() then the context manager: one session (bmv2 hangs on a second one)
        with P4RuntimeClient(grpc, 0, timeout=30).connect() as client:
            client.set_pipeline(pipeline.p4info, pipeline.config)
            assert client.read_table_entries("InaIngress.route_dst") == []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _listening(grpc):
        time.sleep(0.1)
    assert not _listening(grpc), "the switch outlived `inart switch`"


def test_a_standalone_switch_without_an_address_takes_a_free_port() -> None:
    """No fixed default: with bmv2's usual 9559 held by someone else it still starts, on a
    port it names."""
    held = socket.socket()
    try:
        held.bind(("127.0.0.1", 9559))
        held.listen()
    except OSError:  # already held by another process: as good for this test
        pass
    try:
        with inart_foreground("switch", "--target", "embedded", stop_timeout=20) as line:
            found = re.search(r"ready: .*P4Runtime on (127\.0\.0\.1:\d+)", line)
            assert found and found.group(1) != "127.0.0.1:9559", line
            assert _listening(found.group(1))
    finally:
        held.close()


def _listening(address: str) -> bool:
    host, _, port = address.rpartition(":")
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) == 0


def test_pipeline_for_names_the_missing_file(tmp_path) -> None:
    from control_plane.deploy.pipeline import PipelineError

    with pytest.raises(PipelineError, match="P4Info .*missing"):
        pipeline_for("bmv2", Path(tmp_path))
