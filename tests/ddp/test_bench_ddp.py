"""`inart bench ddp`'s all-reduce figures from the ranks' records (the runs themselves are
the benchmark's, not a test's)."""

import time

from control_plane.bench.figures import line
from host_stack.ddp import bench
from host_stack.ddp.bench_allreduce import machine_busy_s


def test_throughput_figures_compare_ina_with_gloo_and_the_cpu_each_call_cost(monkeypatch):
    records = {"inart": {25.0: (1.5, 0.30)}, "gloo": {25.0: (2.0, 0.20)}}

    def fake_run(plan, script, args):
        backend = args[args.index("--backend") + 1]
        return [{"event": "allreduce", "mb": mb, "gbps": g, "cpu_s": c}
                for mb, (g, c) in records[backend].items()] + [{"event": "stats"}]

    monkeypatch.setattr(bench, "script_run", fake_run)
    rate, cpu = bench.throughput("plan.json")
    assert rate["name"] == "ddp.allreduce[25MB]" and rate["ratio"] == 0.75
    assert rate["goal"] == "INA/gloo >= 1" and rate["met"] is False
    assert cpu["name"] == "ddp.allreduce_cpu[25MB]" and cpu["unit"] == "ms"
    assert cpu["value"] == 300.0 and cpu["ratio"] == 1.5 and "goal" not in cpu
    assert "ratio 1.500  no goal" in line(cpu)  # a ratio is printed whether or not it has a goal


def test_machine_busy_time_grows_with_work():
    t0 = machine_busy_s()
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    t1 = machine_busy_s()
    assert t1 - t0 >= 0.2
