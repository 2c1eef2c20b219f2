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
