"""Fixtures of the driver tests: fig1's inart plan compiled into entries (shared with the
install tests), and a clean import of the SDE's ``bfrt_grpc`` package."""

import sys

import pytest

from tests.deploy.conftest import fig1_compiled, fig1_plan  # noqa: F401


@pytest.fixture
def fresh_bfrt_grpc():
    """A test that imports a ``bfrt_grpc`` package of its own, forgotten before and after."""
    def forget() -> None:
        for name in [m for m in sys.modules if m == "bfrt_grpc" or m.startswith("bfrt_grpc.")]:
            del sys.modules[name]
    forget()
    yield
    forget()
