"""`inart switch --metrics`: a standalone switch's program counters on /metrics, read over
P4Runtime (as for bmv2); ``inart_switch_up`` says whether they could be read."""

from __future__ import annotations

import re
import time

from control_plane.deploy.pipeline import Pipeline
from control_plane.drivers.p4runtime import P4RuntimeClient
from control_plane.observe.exporter import scrape, value
from tests.foreground import inart_foreground


def test_switch_metrics_before_and_after_its_pipeline() -> None:
    with inart_foreground("switch", "--target", "embedded", "--metrics", "127.0.0.1:0") as line:
        url = re.search(r"metrics on (\S+)", line)
        listen = re.search(r"P4Runtime on (\S+),", line)
        assert url and listen, line
        before = scrape(url.group(1), timeout=10)
        assert value(before, "inart_switch_up") == 0  # no program: nothing to read yet
        pipeline = Pipeline()
        client = P4RuntimeClient(listen.group(1), device_id=0, election_id=(0, 1)).connect()
        try:
            client.set_pipeline(pipeline.p4info, pipeline.config)
        finally:
            client.close()
        deadline = time.monotonic() + 10
        while (after := scrape(url.group(1), timeout=10)) and \
                value(after, "inart_switch_up") != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
    assert value(after, "inart_switch_up") == 1
    assert ("inart_switch_ina_aggregations_total", ()) in after
    assert value(after, "inart_switch_program_events_total", event="aggregated_out") == 0
