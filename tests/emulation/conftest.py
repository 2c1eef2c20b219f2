"""What the Mininet tests need: Mininet (they skip with the reason without it) and our
committed program (a missing build is a failure, not a skip)."""

from __future__ import annotations

import pytest

from control_plane.deploy.pipeline import Pipeline
from emulation.network.mininet_net import mininet_available


@pytest.fixture
def needs_mininet() -> None:
    reason = mininet_available()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def needs_mininet_and_program(needs_mininet: None) -> None:
    Pipeline().check()
