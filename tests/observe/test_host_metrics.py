"""A training job's /metrics: a PS and two workers on loopback, each with --metrics on a
free port; the workers' rounds and bytes move while they run, and the PS counts every
round and every gradient packet of its shard."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from control_plane.observe.exporter import scrape, value
from control_plane.repo import REPO, child_env
from host_stack.ina.addresses import loopback
from host_stack.ina.jobplan import star_plan

ROUNDS, VALUES, N = 40, 32 * 200, 32


def start(module: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO, env=child_env(),
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_ps_and_worker_metrics_follow_their_rounds(tmp_path: Path) -> None:
    plan = star_plan(2, [1.0])
    plan.save(tmp_path / "plan.json")
    (tmp_path / "addr.json").write_text(loopback(plan.topology.pss
                                                 + plan.topology.workers).to_json())
    job = ["--plan", str(tmp_path / "plan.json"), "--addresses", str(tmp_path / "addr.json"),
           "--model", "synthetic", "--values", str(VALUES), "--n", str(N),
           "--metrics", "127.0.0.1:0"]
    ps = start("host_stack.ina.ps", *job, "--ps", "s1", "--mode", "sum", "--idle-exit", "60")
    workers = []
    try:
        ready = json.loads(ps.stdout.readline())
        ps_url = ready["metrics"]
        assert ps_url.startswith("http://127.0.0.1:"), ready
        assert value(scrape(ps_url), "inart_ps_rounds_total") == 0
        workers = [start("host_stack.train.worker", *job, "--worker", w, "--rounds",
                         str(ROUNDS)) for w in ("w1", "w2")]
        line = workers[0].stderr.readline()
        found = re.search(r"metrics on (\S+)", line)
        assert found, line
        first = json.loads(workers[0].stdout.readline())
        assert first["event"] == "round"
        during = scrape(found.group(1))  # while it runs
        assert value(during, "inart_worker_rounds_total") >= 1
        assert value(during, "inart_worker_sent_bytes_total") > 0
        assert value(during, "inart_worker_round_duration_seconds_count") >= 1
        assert value(during, "inart_worker_sending_rate_bits_per_second") > 0
        for w in workers:
            w.communicate(timeout=120)
            assert w.returncode == 0
        after = scrape(ps_url)
    finally:
        for proc in (*workers, ps):
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
    chunks = VALUES // N
    assert value(after, "inart_ps_rounds_total") == ROUNDS
    received = value(after, "inart_ps_received_packets_total")
    assert received >= 2 * chunks * ROUNDS  # every worker's every chunk, resends beside
    assert value(after, "inart_ps_received_packets_total", kind="first") == 2 * chunks * ROUNDS
