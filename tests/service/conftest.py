"""A real controller service on loopback, with switches held in memory unless a test brings
its own installer (tests/service/test_real_switches.py starts embedded targets)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from control_plane.deploy.pipeline import pipeline_for
from control_plane.drivers.p4runtime import P4Info
from control_plane.service.client import Client
from control_plane.service.controller import Controller
from control_plane.service.server import build_server
from control_plane.service.store import Store
from control_plane.service.switches import Installer, MemoryInstaller


@dataclass
class Service:
    """One running service: its controller, gRPC server, a client and where it keeps state."""

    controller: Controller
    server: grpc.Server
    client: Client
    installer: Installer
    state: Path
    address: str

    def stop(self) -> None:
        self.client.close()
        self.server.stop(0).wait()
        self.controller.stop()


def start_service(state: Path, installer: Installer | None = None, listen: str = "127.0.0.1:0",
                  token: str | None = None, drain_seconds: float = 0.0,
                  reconcile_interval: float = 3600.0) -> Service:
    installer = installer if installer is not None else MemoryInstaller()
    info = P4Info.load(pipeline_for("embedded").p4info)
    controller = Controller(Store(state), installer, info, drain_seconds=drain_seconds,
                            reconcile_interval=reconcile_interval)
    controller.start()
    server, port = build_server(controller, listen, token)
    host = listen.rpartition(":")[0]
    address = f"{host}:{port}"
    return Service(controller, server, Client(address, token, timeout=60), installer, state,
                   address)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    """A service whose old versions drain at once (no host reports progress)."""
    svc = start_service(tmp_path / "state")
    yield svc
    svc.stop()


FIG1_SWITCHES = {"v1": ("127.0.0.1:50901", 1), "v2": ("127.0.0.1:50902", 2)}
