"""Run a grid on Ray: every point one task (one CPU plus its kind's resources, so Ray runs
as many at once as the cluster has cores, and emulations one per machine), each finished
point appended to the results file at once.  A task whose worker process dies is run again
once (Ray's ``max_retries``), then recorded as failed with Ray's reason; a runner's own
exception is recorded at once (the same inputs fail again); either way the sweep goes on."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from control_plane.cli.args import progress as progress_bar
from control_plane.sweep.cluster import (
    ClusterError,
    LocalHead,
    check_address,
    worker_pythonpath,
)
from control_plane.sweep.grid import Grid, GridError, Point
from control_plane.sweep.kinds import KINDS, Kind, run_point
from control_plane.sweep.results import FAILED, OK, ResultLog, ordered, row_for

MAX_RETRIES = 1  # reruns of a point whose worker process died


@dataclass
class Outcome:
    """What a sweep left: every row of the grid (this run's and a resumed one's), in grid
    order, and how many points ran now."""

    rows: list[dict[str, Any]]
    ran: int
    skipped: int

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["status"] != OK]


@contextlib.contextmanager
def connected(address: str | None, cpus: int | None) -> Iterator[Any]:
    """Ray (the module) initialised against ``address``, or against a head started here for
    the sweep."""
    try:
        import ray
    except ImportError as exc:  # Ray is the optional `sweep` extra
        raise ClusterError(f"inart sweep runs on Ray, which is not installed here ({exc}): "
                           f"pip install 'inart[sweep]'") from exc

    with contextlib.ExitStack() as stack:
        if address is None:
            address = stack.enter_context(LocalHead(cpus))
        else:
            check_address(address)
        ray.init(address=address, runtime_env={"env_vars": {"PYTHONPATH": worker_pythonpath()}},
                 log_to_driver=False, logging_level=logging.WARNING)
        stack.callback(ray.shutdown)
        yield ray


def failure_reason(exc: BaseException) -> str:
    """One line: the runner's exception as it was raised, or why Ray lost the worker."""
    import ray.exceptions as rex

    if isinstance(exc, rex.RayTaskError):
        cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else exc
        if cause is not exc:
            return f"{type(cause).__name__}: {cause}"
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    if isinstance(exc, rex.WorkerCrashedError | rex.NodeDiedError | rex.OutOfMemoryError |
                  rex.ActorDiedError | rex.LocalRayletDiedError):
        return f"worker died (tried {MAX_RETRIES + 1} times): {type(exc).__name__}: {first}"
    return f"{type(exc).__name__}: {first}"


def check_resources(kinds: list[Kind]) -> None:
    """Refuse a sweep whose points no node could ever take (Ray would wait forever)."""
    import ray

    have = ray.cluster_resources()
    for kind in kinds:
        for name, amount in kind.resources.items():
            if have.get(name, 0) < amount:
                raise GridError(f"kind {kind.name}: no node of the cluster offers the Ray "
                                f"resource {name!r} (start such nodes with `ray start ... "
                                f"--resources '{{\"{name}\": 1}}'`)")


def point_dir(out: Path, point: Point) -> str:
    """Absolute directory for a point's own files (on the node that runs it)."""
    return str((out / "points" / point.key.replace("/", "_")).resolve())


def run_sweep(grid: Grid, out: Path, *, address: str | None = None, cpus: int | None = None,
              kinds: dict[str, Kind] | None = None, progress: bool = True) -> Outcome:
    """Every point of ``grid`` not already done in ``out`` (a sweep directory), in parallel;
    rows appended to ``out``/results.jsonl as they finish."""
    kinds = kinds or KINDS
    kind = kinds[grid.kind]
    out.mkdir(parents=True, exist_ok=True)
    log = ResultLog(out)
    points = grid.points()
    done = log.done()
    todo = [p for p in points if p.key not in done]
    if todo:
        _run(todo, grid, kind, out, log, address, cpus, progress, len(points) - len(todo))
    return Outcome(ordered(log.latest(), points), len(todo), len(points) - len(todo))


def _run(todo: list[Point], grid: Grid, kind: Kind, out: Path, log: ResultLog,
         address: str | None, cpus: int | None, progress: bool, skipped: int) -> None:
    with connected(address, cpus) as ray:
        check_resources([kind])
        task = ray.remote(run_point).options(num_cpus=1, resources=kind.resources,
                                             max_retries=MAX_RETRIES, retry_exceptions=False)
        pending = {task.remote(kind.runner, p.to_dict(), grid.settings, point_dir(out, p)): p
                   for p in todo}
        counts = {OK: 0, FAILED: 0}
        with progress_bar(total=skipped + len(todo), initial=skipped,
                          desc=f"sweep {grid.kind}", unit="point", quiet=not progress) as bar:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    point = pending.pop(ref)
                    try:
                        row = row_for(point, OK, ray.get(ref))
                    except ray.exceptions.RayError as exc:
                        row = row_for(point, FAILED, error=failure_reason(exc))
                    log.append(row)
                    counts[row["status"]] += 1
                    bar.set_postfix(done=counts[OK], failed=counts[FAILED])
                    bar.update(1)
