"""Monte Carlo tree search over data-distribution states (the paper's Sec. 3.2).

A tree node is the state reached by one sequence of actions; a branch is an action.
Selection: score = R + lambda * p * sqrt(n_parent) / (1 + n_child) with R = W / n and a
uniform prior p = 1/M; lambda falls linearly from lambda1 = 10 to lambda2 = 0 over the first
half of the Ep = 8M episodes, then stays at lambda2.  Ties are broken at random (seeded).
Reward: rank of the completed schedule's time in the list of times seen so far (0 for an
episode that does not complete).  Pruning: a branch is cut for good when (1) the time so far
is no better than the best complete schedule (times along a tree path never change, so the cut
is permanent), (2) the action is invalid or moves no new data, (3) the episode hits the step
cap N without completing; a node whose branches are all cut is cut in its parent.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

from host_stack.collectives.rsgcm.env import Environment, Schedule, State, Step
from host_stack.collectives.rsgcm.space import Action


@dataclass
class _Node:
    m: int
    n: float = 0.0
    child_n: np.ndarray = field(init=False)
    child_w: np.ndarray = field(init=False)
    cut: np.ndarray = field(init=False)
    children: dict[int, _Node] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.child_n = np.zeros(self.m)
        self.child_w = np.zeros(self.m)
        self.cut = np.zeros(self.m, dtype=bool)


@dataclass
class SearchResult:
    """Best schedule found (None if none) and how the search went."""

    schedule: Schedule | None
    episodes: int
    completed: int
    history: list[float]  # best time after each episode (inf before the first completion)


def _rank_reward(times_desc: list[float], t: float) -> int:
    """Rank of t in the descending list of times seen (1 = slowest); inserts new times."""
    keys = [-x for x in times_desc]
    pos = bisect.bisect_left(keys, -t)
    if pos == len(times_desc) or times_desc[pos] != t:
        times_desc.insert(pos, t)
    return pos + 1


def mcts(env: Environment, actions: list[Action], episodes: int | None = None,
         max_steps: int | None = None, seed: int = 0, lambda1: float = 10.0,
         lambda2: float = 0.0, explore_fraction: float = 0.5,
         progress: bool = False) -> SearchResult:
    """Search for the fastest complete schedule; Ep defaults to 8M, the step cap to N."""
    m = len(actions)
    if m == 0:
        return SearchResult(None, 0, 0, [])
    episodes = 8 * m if episodes is None else episodes
    max_steps = len(env.devices) if max_steps is None else max_steps
    rng = np.random.default_rng(seed)
    root = _Node(m)
    prior = 1.0 / m
    best_time, best_steps = math.inf, None
    times_desc: list[float] = []
    history: list[float] = []
    completed = 0
    ep_ex = max(1, int(episodes * explore_fraction))
    it = range(episodes)
    if progress:
        from control_plane.cli.args import progress as progress_bar
        it = progress_bar(it, desc="mcts", unit="ep")
    for ep in it:
        if root.cut.all():
            history.append(best_time)
            continue
        lam = lambda1 - (lambda1 - lambda2) / ep_ex * ep if ep < ep_ex else lambda2
        node, state, elapsed = root, env.initial(), 0.0
        path: list[tuple[_Node, int]] = []
        steps: list[Step] = []
        reward = 0.0
        while True:
            a, res = _select(node, env, state, actions, lam, prior, rng)
            if a is None:  # every branch cut: cut this node in its parent
                if path:
                    parent, pa = path[-1]
                    parent.cut[pa] = True
                break
            new_state, step = res
            elapsed += step.time
            if elapsed >= best_time:  # rule 1
                node.cut[a] = True
                break
            path.append((node, a))
            steps.append(step)
            child = node.children.setdefault(a, _Node(m))
            if env.done(new_state):
                completed += 1
                best_time, best_steps = elapsed, list(steps)
                reward = float(_rank_reward(times_desc, elapsed))
                break
            if len(steps) >= max_steps:  # rule 3
                node.cut[a] = True
                break
            node, state = child, new_state
        for nd, a in path:
            nd.n += 1
            nd.child_n[a] += 1
            nd.child_w[a] += reward
        history.append(best_time)
    sched = None
    if best_steps is not None:
        sched = Schedule(best_steps, env.nblocks, list(env.devices))
    return SearchResult(sched, episodes, completed, history)


def _select(node: _Node, env: Environment, state: State, actions: list[Action], lam: float,
            prior: float, rng: np.random.Generator) -> tuple[int | None, tuple | None]:
    """Highest-scoring uncut branch whose action is valid here; cuts invalid ones (rule 2)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(node.child_n > 0, node.child_w / np.maximum(node.child_n, 1), 0.0)
    score = r + lam * prior * math.sqrt(node.n) / (1.0 + node.child_n)
    score = score + rng.random(node.m) * 1e-9  # random tie-break among equals
    score[node.cut] = -np.inf
    while True:
        a = int(np.argmax(score))
        if score[a] == -np.inf:
            return None, None
        res = env.apply(state, actions[a])
        if res is not None:
            return a, res
        node.cut[a] = True
        score[a] = -np.inf
