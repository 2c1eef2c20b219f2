"""Baselines over the same actions as the MCTS: greedy, simulated annealing, particle swarm.

Greedy takes, in every state, the valid action that finishes soonest (the cheapest next step;
ties to the first action), with no look-ahead -- the paper's "best action according to the
current state".  SA and PSO search sequences of N actions; a sequence is scored by simulating
it and skipping the actions invalid where they occur (a generous rule for them), with energy =
time if it completes, else a penalty above any complete schedule plus the missing entries, so
they get a gradient towards completion.  All three get the same number of schedule
evaluations as the MCTS when compared.
"""

from __future__ import annotations

import math

import numpy as np

from host_stack.collectives.rsgcm.env import Environment, Schedule, ring_time, simulate
from host_stack.collectives.rsgcm.space import Action


def greedy(env: Environment, actions: list[Action], max_steps: int | None = None
           ) -> Schedule | None:
    """Cheapest valid action step after step; None if it gets stuck or hits the step cap."""
    max_steps = len(env.devices) if max_steps is None else max_steps
    state, steps = env.initial(), []
    for _ in range(max_steps):
        options = [res for a in actions if (res := env.apply(state, a)) is not None]
        if not options:
            return None
        state, step = min(options, key=lambda r: r[1].time)
        steps.append(step)
        if env.done(state):
            return Schedule(steps, env.nblocks, list(env.devices))
    return None


def _energy(env: Environment, seq: list[Action], penalty: float) -> tuple[float, Schedule | None]:
    state, steps = simulate(env, seq)
    t = sum(s.time for s in steps)
    if env.done(state):
        return t, Schedule(steps, env.nblocks, list(env.devices))
    return penalty * (1 + env.missing(state)), None


def _penalty(env: Environment, actions: list[Action]) -> float:
    """Above any complete schedule: N steps of the slowest ring, times ten."""
    d = env.data_mb / env.nblocks
    worst = max(ring_time(len(r), d, env.alpha, env.beta) for a in actions for r, _ in a.rings())
    return 10.0 * len(env.devices) * worst


def simulated_annealing(env: Environment, actions: list[Action], evaluations: int,
                        seed: int = 0, t0: float | None = None) -> Schedule | None:
    """Change one position of the sequence at a time; geometric cooling to 1e-3 of t0."""
    rng = np.random.default_rng(seed)
    n, m = len(env.devices), len(actions)
    if m == 0 or evaluations < 1:
        return None
    pen = _penalty(env, actions)
    cur = list(rng.integers(m, size=n))
    e_cur, best = _energy(env, [actions[i] for i in cur], pen)
    e_best = e_cur
    t0 = pen if t0 is None else t0
    for k in range(1, evaluations):
        temp = t0 * (1e-3 ** (k / evaluations))
        cand = list(cur)
        cand[int(rng.integers(n))] = int(rng.integers(m))
        e, sched = _energy(env, [actions[i] for i in cand], pen)
        if e <= e_cur or rng.random() < math.exp(-(e - e_cur) / temp):
            cur, e_cur = cand, e
        if sched is not None and e < e_best:
            best, e_best = sched, e
    return best


def particle_swarm(env: Environment, actions: list[Action], evaluations: int, seed: int = 0,
                   particles: int = 20, inertia: float = 0.7, c1: float = 1.5,
                   c2: float = 1.5) -> Schedule | None:
    """Positions in [0, 1)^N map to action indices floor(x * M); the standard velocity rule."""
    rng = np.random.default_rng(seed)
    n, m = len(env.devices), len(actions)
    if m == 0 or evaluations < 1:
        return None
    pen = _penalty(env, actions)
    x = rng.random((particles, n))
    v = rng.uniform(-0.1, 0.1, (particles, n))

    def score(pos: np.ndarray) -> tuple[float, Schedule | None]:
        idx = np.minimum((pos * m).astype(int), m - 1)
        return _energy(env, [actions[i] for i in idx], pen)

    pbest = x.copy()
    pscore = np.array([score(p)[0] for p in x])
    g = int(np.argmin(pscore))
    best: Schedule | None = score(x[g])[1]
    for _ in range(max(0, evaluations // particles - 1)):
        r1, r2 = rng.random((particles, n)), rng.random((particles, n))
        v = inertia * v + c1 * r1 * (pbest - x) + c2 * r2 * (pbest[g] - x)
        x = np.clip(x + v, 0.0, 1.0 - 1e-9)
        for i in range(particles):
            e, sched = score(x[i])
            if e < pscore[i]:
                pbest[i], pscore[i] = x[i].copy(), e
            if sched is not None and (best is None or sched.time < best.time):
                best = sched
        g = int(np.argmin(pscore))
    return best
