"""The `base_test` module that P4Testgen's PTF tests import (`import base_test as bt`), on
inart's harness: each generated test runs unchanged against any P4Runtime target the PTF
suite runs on (the embedded target, bmv2), through inart's own P4Runtime client.

What a generated test asks of it: a `P4RuntimeTest` base whose setUp gives a fresh pipeline
(ina_base.InaTest pushes the program before every test: empty tables, zero registers, which
is the state P4Testgen assumes), `updateConfig`, the match builders of the program's match
kinds (`Exact`, `Lpm`, `Ternary`; a range or optional match would need its own),
`table_add` by P4Info names, `insert_pre_clone_session`, and the module names
`autocleanup`, `testutils` and `p4runtime_pb2`.  A request the program
cannot need (meters: it has none) fails the test by name instead of being ignored.
"""

from __future__ import annotations

import functools
import logging
import types
from collections.abc import Callable
from typing import Any

from ina_base import InaTest

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2

__all__ = ["P4RuntimeTest", "autocleanup", "p4runtime_pb2", "testutils"]

Match = tuple[str, Any]
# what the generated tests use of base_test.testutils: its log
testutils = types.SimpleNamespace(log=logging.getLogger("p4testgen"))


def autocleanup(test: Callable[..., None]) -> Callable[..., None]:
    """The generated runTestImpl's decorator: nothing to undo, the next test's setUp pushes
    the pipeline again."""
    @functools.wraps(test)
    def run(self: P4RuntimeTest, *args: Any, **kwargs: Any) -> None:
        test(self, *args, **kwargs)
    return run


class P4RuntimeTest(InaTest):
    """A generated test's base: InaTest's fresh pipeline and client, P4Testgen's vocabulary."""

    device_id = 0  # the PTF device number the generated checks name

    def updateConfig(self) -> bool:  # noqa: N802 - the name the generated tests call
        """The pipeline was pushed by setUp already (a fresh one for every test)."""
        return True

    # -- match fields, as P4Testgen writes them: (P4Info field name, value) --------------
    @staticmethod
    def Exact(name: str, value: int) -> Match:  # noqa: N802
        return name, value

    # a don't-care (an LPM /0, a ternary mask 0) is written as P4Runtime wants it: omitted
    @staticmethod
    def Lpm(name: str, value: int, prefix_len: int) -> Match:  # noqa: N802
        return name, (value, prefix_len) if prefix_len else None

    @staticmethod
    def Ternary(name: str, value: int, mask: int) -> Match:  # noqa: N802
        return name, (value, mask) if mask else None

    def table_add(self, key: tuple[str, list[Match]], action: tuple[str, list[tuple[str, int]]],
                  priority: int | None = None, options: dict | None = None) -> None:
        """One entry of a table (names as in the P4Info); action profiles are refused by
        name: the program has none."""
        table, matches = key
        action_name, params = action
        if options:
            self.fail(f"table_add on {table}: options {options} (action profiles) are not "
                      f"supported by this harness")
        match = {name: value for name, value in matches if value is not None}
        self.client.insert_table_entry(table, match, action_name, dict(params),
                                       priority=priority or 0)

    def insert_pre_clone_session(self, session_id: int, ports: list[int]) -> None:
        self.fail(f"clone session {session_id} to ports {ports}: the program clones nothing, "
                  f"so a generated test should not ask for one")

    def meter_write(self, *args: Any, **kwargs: Any) -> None:
        self.fail("meter_write: the program has no meters")
