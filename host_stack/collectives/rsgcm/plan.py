"""One call from a world size (or connection graph) to a searched schedule."""

from __future__ import annotations

import networkx as nx

from host_stack.collectives.rsgcm.env import Environment, Schedule
from host_stack.collectives.rsgcm.mcts import mcts
from host_stack.collectives.rsgcm.space import grid_shape, search_space, torus


def plan_schedule(world: int, s: int = 2, alpha: float = 9e-6, beta: float = 39e-6,
                  data_mb: float = 32.0, seed: int = 0, graph: nx.Graph | None = None,
                  episodes: int | None = None) -> Schedule:
    """MCTS schedule for ``graph`` (default: the squarest torus of ``world`` devices).

    Devices are ranks 0..world-1.  Raises ValueError when the search finds no schedule.
    """
    if world < 1:
        raise ValueError(f"world: expected >= 1, got {world}")
    g = torus(*grid_shape(world)) if graph is None else graph
    if world == 1:
        return Schedule([], s, [0])
    env = Environment(g, s, alpha, beta, data_mb)
    result = mcts(env, search_space(g, s), episodes=episodes, seed=seed)
    if result.schedule is None:
        raise ValueError(f"graph: RSGCM found no complete schedule for {world} devices, S={s}")
    return result.schedule
