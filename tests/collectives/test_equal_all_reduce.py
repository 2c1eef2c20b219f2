"""Every collective gives torch.distributed.all_reduce's sums (gloo, several processes)."""

from __future__ import annotations

import pytest

from host_stack.collectives.launch import run_processes
from host_stack.collectives.schemes import prepare
from host_stack.collectives.verify import compare_worker

TOL = 1e-5  # relative to the largest |sum|: float32 sums in a different order


def check(world: int, sizes: list[int], chunk_bytes: int, timeout_s: float = 180.0) -> None:
    configs = [prepare(s, world, chunk_bytes=chunk_bytes) for s in ("ring", "tree", "rsgcm")]
    results = run_processes(compare_worker, world, args=(configs, sizes), timeout_s=timeout_s)
    for rank, errs in enumerate(results):
        for scheme, per_size in errs.items():
            for n, e in zip(sizes, per_size, strict=True):
                assert e <= TOL, f"{scheme} rank {rank} size {n}: error {e}"


@pytest.mark.parametrize("world", [2, 3, 4])
def test_small_worlds_all_sizes(world: int) -> None:
    # 4 KiB chunks so 1M elements also exercise multi-chunk pipelining
    check(world, [1, 2, 7, 1000, 1_000_003], chunk_bytes=4096)


@pytest.mark.slow
@pytest.mark.parametrize("world", [5, 8])
def test_up_to_8_ranks_and_64mb(world: int) -> None:
    check(world, [1, 7, 16 * 2**20 + 3], chunk_bytes=1 << 20, timeout_s=600)


def test_schedule_after_device_failure_runs_on_remaining_ranks() -> None:
    from host_stack.collectives.rsgcm import space as sp
    from host_stack.collectives.rsgcm.env import Environment
    from host_stack.collectives.rsgcm.mcts import mcts
    from host_stack.collectives.schemes import SchemeConfig

    g = sp.fail_device(sp.torus(2, 3), 2)  # devices 0, 1, 3, 4, 5 run on ranks 0..4
    sched = mcts(Environment(g, 2), sp.search_space(g, 2), seed=0).schedule
    assert sched is not None and sched.devices == [0, 1, 3, 4, 5]
    cfg = SchemeConfig("rsgcm", 5, schedule=sched)
    results = run_processes(compare_worker, 5, args=([cfg], [1, 7, 1000]), timeout_s=120)
    assert all(e <= TOL for r in results for e in r["rsgcm"])
