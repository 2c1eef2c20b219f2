"""Fixtures of the install tests: fig1's inart plan (solved once) and standalone switches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from control_plane.deploy.addressing import assign
from control_plane.deploy.entries import Compiled, compile_plan
from control_plane.deploy.transaction import SwitchAddress
from control_plane.localhost import free_port
from control_plane.model.plan import Plan
from control_plane.model.topologies import fig1
from control_plane.solver.solve import solve
from emulation.targets import SwitchProcess, SwitchSpec, get_target


@pytest.fixture(scope="session")
def fig1_plan() -> Plan:
    return solve(fig1(), "inart")


@pytest.fixture(scope="session")
def fig1_plan_file(fig1_plan, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "fig1-inart.json"
    fig1_plan.save(path)
    return path


@pytest.fixture(scope="session")
def fig1_compiled(fig1_plan) -> Compiled:
    return compile_plan(fig1_plan, assign(fig1_plan.topology))


@pytest.fixture(params=["embedded", "bmv2"])
def target(request) -> str:
    reason = get_target(request.param).unavailable()
    if reason:
        pytest.skip(f"{request.param}: {reason}")
    return request.param


class Switches:
    """v1 and v2 of fig1 as standalone switch processes (devices 1 and 2, no ports)."""

    def __init__(self, target: str, log_dir: Path) -> None:
        self.target = target
        self.addresses: dict[str, SwitchAddress] = {}
        self.procs: dict[str, SwitchProcess] = {}
        for device, name in enumerate(("v1", "v2"), start=1):
            address = f"127.0.0.1:{free_port()}"
            self.addresses[name] = SwitchAddress(name, address, device)
            self.procs[name] = SwitchProcess(get_target(target),
                                             SwitchSpec(device, {}, address),
                                             log=log_dir / f"{name}.log")

    def args(self) -> list[str]:
        return [a for sw in self.addresses.values()
                for a in ("--switch", f"{sw.name}={sw.address}")]


@pytest.fixture
def switches(target, tmp_path) -> Iterator[Switches]:
    pair = Switches(target, tmp_path)
    try:
        for proc in pair.procs.values():
            proc.start()
        for proc in pair.procs.values():
            proc.wait_ready()
        yield pair
    finally:
        for proc in pair.procs.values():
            proc.stop()
