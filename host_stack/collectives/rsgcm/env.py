"""The virtual environment: data distribution, alpha-beta cost, done and validity.

State: for every block k and device i, the set of devices j whose block k device i holds
(the paper's data[i][j][k], stored as one bitmask per (k, i)).

A ring all-reduce *sums* its members' partial blocks.  The paper's 0/1 state would let a ring
merge partial sums that share a contribution, which a real sum counts twice; we accept a ring
only when its members hold pairwise disjoint contributions (then it is exact), treat a ring
whose members all hold the same contributions as a no-op (no time, nothing executed), and
reject the action otherwise.  This is the paper's "no new data" rule made exact, and it is
what lets the executor's results equal all_reduce.

Cost (alpha-beta, the paper's Eq. 7 applied to a ring): a ring of f devices on d MB takes
2 alpha (f-1) + 2 beta (f-1) d / f; an action takes its slowest ring; a schedule the sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from host_stack.collectives.rsgcm.space import Action, Ring

State = tuple[tuple[int, ...], ...]


def ring_time(f: int, d_mb: float, alpha: float, beta: float) -> float:
    """Ring all-reduce of d MB over f devices: 2 alpha (f-1) + 2 beta (f-1) d / f."""
    return 2 * alpha * (f - 1) + 2 * beta * (f - 1) * d_mb / f if f > 1 else 0.0


@dataclass(frozen=True)
class Step:
    """The rings an action really ran (no-ops dropped) and the time it took."""

    rings: tuple[tuple[Ring, int], ...]
    time: float


class Environment:
    """Simulates actions on a connection graph with S blocks of D/S MB each."""

    def __init__(self, g: nx.Graph, s: int, alpha: float = 9e-6, beta: float = 39e-6,
                 data_mb: float = 32.0) -> None:
        if alpha < 0 or beta < 0 or data_mb <= 0:
            raise ValueError(f"alpha={alpha}, beta={beta}, data_mb={data_mb}: expected "
                             "alpha, beta >= 0 and data_mb > 0")
        self.devices = sorted(g.nodes)
        self.index = {d: i for i, d in enumerate(self.devices)}
        self.nblocks = s
        self.alpha, self.beta, self.data_mb = alpha, beta, data_mb
        self.full = (1 << len(self.devices)) - 1

    def initial(self) -> State:
        """Every device holds only its own blocks."""
        return tuple(tuple(1 << i for i in range(len(self.devices)))
                     for _ in range(self.nblocks))

    def done(self, state: State) -> bool:
        """All-reduce complete: every device holds every device's every block."""
        return all(m == self.full for blk in state for m in blk)

    def missing(self, state: State) -> int:
        """How many (device, source, block) entries are still missing."""
        n = len(self.devices)
        return sum(n - m.bit_count() for blk in state for m in blk)

    def apply(self, state: State, action: Action) -> tuple[State, Step] | None:
        """The next state and the step, or None if the action is invalid or moves nothing."""
        blocks = [list(b) for b in state]
        ran: list[tuple[Ring, int]] = []
        slowest = 0.0
        d = self.data_mb / self.nblocks
        for ring, b in action.rings():
            idx = [self.index.get(x) for x in ring]
            if None in idx:
                return None
            masks = [state[b][i] for i in idx]
            if all(m == masks[0] for m in masks):
                continue
            union = 0
            for m in masks:
                if union & m:
                    return None  # overlapping partial sums: a sum would double-count
                union |= m
            for i in idx:
                blocks[b][i] = union
            ran.append((ring, b))
            slowest = max(slowest, ring_time(len(ring), d, self.alpha, self.beta))
        if not ran:
            return None
        return tuple(tuple(b) for b in blocks), Step(tuple(ran), slowest)


@dataclass
class Schedule:
    """A complete schedule: its steps, block count, modelled time and the devices it spans."""

    steps: list[Step]
    nblocks: int
    devices: list[int]

    @property
    def time(self) -> float:
        """Modelled time (s): the sum of the steps' times."""
        return sum(s.time for s in self.steps)

    def to_json(self) -> dict:
        """Plain data for JSON output and for broadcasting to other ranks."""
        return {"nblocks": self.nblocks, "devices": self.devices, "time_s": self.time,
                "steps": [{"time_s": s.time, "rings": [[list(r), b] for r, b in s.rings]}
                          for s in self.steps]}

    @classmethod
    def from_json(cls, data: dict) -> Schedule:
        """Inverse of ``to_json``."""
        steps = [Step(tuple((tuple(r), int(b)) for r, b in s["rings"]), float(s["time_s"]))
                 for s in data["steps"]]
        return cls(steps, int(data["nblocks"]), [int(d) for d in data["devices"]])


def simulate(env: Environment, actions: list[Action]) -> tuple[State, list[Step]]:
    """Apply actions in order, skipping those invalid in the state reached (baselines' rule)."""
    state, steps = env.initial(), []
    for a in actions:
        if env.done(state):
            break
        res = env.apply(state, a)
        if res is not None:
            state, step = res
            steps.append(step)
    return state, steps
