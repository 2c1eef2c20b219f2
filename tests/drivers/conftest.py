"""Fixtures of the driver tests: fig1's inart plan compiled into entries (shared with the
install tests)."""

from tests.deploy.conftest import fig1_compiled, fig1_plan  # noqa: F401
