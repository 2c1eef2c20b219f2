"""The all-reduce schemes by name, prepared once (topology, trees, schedule) and then bound to a
rank inside each process.  Preparing in the parent keeps every rank on the same trees and the
same schedule, which the collectives require."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import networkx as nx
import torch

from host_stack.collectives.p2p import all_reduce
from host_stack.collectives.rat import Tree, build_trees, hierarchy, rack_topology
from host_stack.collectives.ring import DEFAULT_CHUNK_BYTES, ring_all_reduce
from host_stack.collectives.rsgcm.env import Schedule
from host_stack.collectives.rsgcm.executor import ScheduleExecutor
from host_stack.collectives.rsgcm.plan import plan_schedule
from host_stack.collectives.tree import tree_all_reduce

SCHEMES = ("ring", "tree", "rsgcm", "torch")


@dataclass
class SchemeConfig:
    """Everything a rank needs to run a scheme; picklable so the launcher can ship it."""

    scheme: str
    world: int
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    timeout_s: float = 60.0
    trees: list[Tree] | None = None
    schedule: Schedule | None = None


def prepare(scheme: str, world: int, topology: nx.Graph | None = None, hosts_per_rack: int = 2,
            rsgcm_s: int = 2, seed: int = 0, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
            timeout_s: float = 60.0, workers: Sequence[str] | None = None) -> SchemeConfig:
    """Build trees (tree) or search a schedule (rsgcm) for ``world`` ranks.

    tree: ``workers`` are the ranks 0..world-1 in order (a job's plan order: what each process
    joins the group as), by default the workers of ``topology`` sorted by id string (default
    topology: racks of ``hosts_per_rack`` under one spine); trees built for another order than
    the ranks' would aggregate across racks.  rsgcm: the squarest torus of ``world``.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme '{scheme}': expected one of {SCHEMES}")
    if not isinstance(world, int) or world < 1:
        raise ValueError(f"world: expected a positive integer, got {world!r}")
    cfg = SchemeConfig(scheme, world, chunk_bytes, timeout_s)
    if scheme == "tree":
        g = rack_topology(world, hosts_per_rack) if topology is None else topology
        h = hierarchy(g, workers)
        if len(h.workers) != world:
            raise ValueError(f"topology: has {len(h.workers)} workers, expected world={world}")
        cfg.trees = build_trees(h)
    elif scheme == "rsgcm":
        cfg.schedule = plan_schedule(world, s=rsgcm_s, seed=seed)
    return cfg


def bind(cfg: SchemeConfig, rank: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """The in-place sum all-reduce of ``cfg`` for this rank (collective for rsgcm: groups)."""
    if cfg.scheme == "ring":
        return lambda t: ring_all_reduce(t, chunk_bytes=cfg.chunk_bytes, timeout_s=cfg.timeout_s)
    if cfg.scheme == "tree":
        trees = cfg.trees or []
        return lambda t: tree_all_reduce(t, trees, rank, timeout_s=cfg.timeout_s)
    if cfg.scheme == "rsgcm":
        if cfg.schedule is None:
            raise ValueError("schedule: rsgcm needs a schedule (use prepare())")
        return ScheduleExecutor(cfg.schedule, timeout_s=cfg.timeout_s)

    def torch_all_reduce(t: torch.Tensor) -> torch.Tensor:
        all_reduce(t)
        return t
    return torch_all_reduce
