"""Embedded switches forked from one SwitchFarm: each its own process and P4Runtime endpoint,
programmed on its own, sharing the imported code (less PSS than separate interpreters)."""

from __future__ import annotations

import os
import signal

import pytest

from control_plane.deploy.pipeline import pipeline_for
from control_plane.drivers.p4runtime import P4RuntimeClient
from control_plane.localhost import free_port
from emulation.measure.resources import pss_kb
from emulation.targets import SwitchProcess, SwitchSpec, TargetError, get_target
from emulation.targets.embedded.farm import SwitchFarm


def _switches(tmp_path, farm, count):
    return [SwitchProcess(get_target("embedded"),
                          SwitchSpec(i + 1, {}, f"127.0.0.1:{free_port()}"),
                          log=tmp_path / f"s{i}.log", farm=farm) for i in range(count)]


def test_forked_switches_serve_their_own_p4runtime_and_stop(tmp_path) -> None:
    farm = SwitchFarm()
    switches = _switches(tmp_path, farm, 2)
    try:
        for sw in switches:
            sw.start()
        for sw in switches:
            sw.wait_ready()
        assert len({sw.proc.pid for sw in switches} | {farm.pid}) == 3
        pipeline = pipeline_for("embedded")
        first, second = switches
        with P4RuntimeClient(first.spec.grpc, 1, timeout=30).connect() as client:
            client.set_pipeline(pipeline.p4info, pipeline.config)
            assert client.read_table_entries("InaIngress.route_dst") == []
        with P4RuntimeClient(second.spec.grpc, 2, timeout=30).connect() as client:
            with pytest.raises(Exception, match="(?i)pipeline"):  # not programmed: its own
                client.use_p4info(pipeline.p4info)
                client.read_table_entries("InaIngress.route_dst")
        second.proc.send_signal(signal.SIGKILL)
        second.proc.wait(timeout=10)
        assert second.health() == "exited with status -9"
        assert first.health() is None
    finally:
        for sw in switches:
            sw.stop()
        farm.close()
    assert first.proc.returncode == 0
    for sw in switches:
        with pytest.raises(ProcessLookupError):
            os.kill(sw.proc.pid, 0)


def test_forked_switches_share_their_code(tmp_path) -> None:
    """Three forked switches plus their parent take less PSS than three interpreters."""
    totals = {}
    for mode in ("farm", "processes"):
        farm = SwitchFarm() if mode == "farm" else None
        switches = _switches(tmp_path, farm, 3)
        try:
            for sw in switches:
                sw.start()
            for sw in switches:
                sw.wait_ready()
            pids = [sw.proc.pid for sw in switches] + ([farm.pid] if farm else [])
            totals[mode] = sum(pss_kb(p) for p in pids)
        finally:
            for sw in switches:
                sw.stop()
            if farm is not None:
                farm.close()
    assert 0 < totals["farm"] < 0.8 * totals["processes"], totals


def test_a_farm_forks_only_embedded_switches_in_the_root_namespace(tmp_path) -> None:
    with pytest.raises(TargetError, match="root namespace"):
        SwitchProcess(get_target("embedded"), SwitchSpec(), netns="ns1", farm=SwitchFarm())
