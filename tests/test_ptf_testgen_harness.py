"""The `base_test` P4Testgen's PTF tests import (tests/ptf_testgen/base_test.py): its
vocabulary written as inart's P4Runtime client wants it (a fake client records the calls)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE / "ptf") not in sys.path:  # ina_base, as the harness's PYTHONPATH gives it
    sys.path.insert(0, str(HERE / "ptf"))
# by its path: the suite's folder is not put on sys.path (its modules' names are the ptf
# tool's business)
_spec = importlib.util.spec_from_file_location("base_test", HERE / "ptf_testgen" / "base_test.py")
assert _spec is not None and _spec.loader is not None
bt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bt)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def insert_table_entry(self, table, match, action, params=None, priority=0) -> None:
        self.calls.append((table, match, action, params, priority))


def harness() -> bt.P4RuntimeTest:
    test = bt.P4RuntimeTest.__new__(bt.P4RuntimeTest)  # no switch: setUp is not run
    test.client = Recorder()
    return test


def test_entries_go_to_the_client_by_name_with_dont_cares_omitted() -> None:
    t = harness()
    t.table_add(("InaIngress.route_dst", [t.Lpm("dst_addr", 0x0A000000, 8)]),
                ("InaIngress.set_next_hop", [("port", 3), ("dst_mac", 1), ("src_mac", 2)]),
                None)
    t.table_add(("InaIngress.route_dst", [t.Lpm("dst_addr", 0x12345678, 0)]),
                ("InaIngress.set_next_hop", [("port", 4), ("dst_mac", 1), ("src_mac", 2)]))
    t.table_add(("T", [t.Exact("k", 5), t.Ternary("m", 7, 0), t.Ternary("n", 7, 3)]),
                ("A", []), 10)
    assert t.client.calls == [
        ("InaIngress.route_dst", {"dst_addr": (0x0A000000, 8)}, "InaIngress.set_next_hop",
         {"port": 3, "dst_mac": 1, "src_mac": 2}, 0),
        # a /0 prefix is P4Runtime's don't-care: the field is left out, not written as /0
        ("InaIngress.route_dst", {}, "InaIngress.set_next_hop",
         {"port": 4, "dst_mac": 1, "src_mac": 2}, 0),
        ("T", {"k": 5, "n": (7, 3)}, "A", {}, 10),
    ]
    assert t.updateConfig() is True and t.device_id == 0


def test_what_the_program_cannot_need_fails_the_test_by_name() -> None:
    t = harness()
    with pytest.raises(AssertionError, match="clone session 5"):
        t.insert_pre_clone_session(5, [1])
    with pytest.raises(AssertionError, match="no meters"):
        t.meter_write("m", 0, None)
    with pytest.raises(AssertionError, match="action profiles"):
        t.table_add(("T", []), ("A", []), None, {"oneshot": True})
