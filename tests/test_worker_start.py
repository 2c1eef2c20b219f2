"""The worker's start barrier: round 0 waits for the launcher's start file, with a deadline."""

from __future__ import annotations

import threading

import pytest

from host_stack.ina.transport import TransportError
from host_stack.train.worker import wait_for_start


def test_waits_until_the_start_file_appears(tmp_path):
    path = tmp_path / "start"
    timer = threading.Timer(0.2, path.touch)
    timer.start()
    wait_for_start(path, 10.0)
    assert path.exists()


def test_a_missing_start_file_is_a_clear_error(tmp_path):
    with pytest.raises(TransportError, match=r"start file .*start did not appear within 0 s"):
        wait_for_start(tmp_path / "start", 0.1)
