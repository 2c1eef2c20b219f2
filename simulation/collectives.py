"""What the collectives of host_stack/collectives put on the links, as stages of transfers.

Byte models are the host stack's own (host_stack/collectives/p2p.py): every p2p message costs
``message_wire_bytes`` on the sender's route (gloo's preamble, TCP/IP/Ethernet headers per
segment) and ``ack_wire_bytes`` back on the reverse route (one ACK per two segments).  Routes
follow ``routing`` (simulation/routes.py: ECMP, or the emulation's destination routes).

- ring: host_stack's chunked ring (ring.py) over the workers in rank order; each chunk is
  forwarded as soon as it is reduced, so the 2(f-1) transfers stream: one stage in which every
  rank sends 2(f-1) segments of B/f to the next, with a latency chain of 2(f-1) routes and
  2(f-1) host messages (the ring posts its receives ahead, so gloo's notices are off it).
- tree: RAT (rat.py), one tree per root, each on B/n; reduce stage by stage up all trees at
  once, then broadcast down; transfers between the same two ranks in one stage are one
  (counted over the trees by simulation/rat_traffic.py).  Each rank runs the stages on its
  own (simulation/ranks.py), as tree.py does.
- rsgcm: the MCTS schedule of rsgcm/plan.py (S=2 blocks); each step runs its rings at once,
  every ring one gloo ring all-reduce over its members in rank order, simulated rank by rank
  and message by message (simulation/gloo_rings.py), or, above a number of messages, each
  step's transfers rank by rank (simulation/ranks.py) with a chain of two host messages per
  segment a rank sends (the notice and the data).  Its bytes count gloo's two notices a
  message (``NOTICE_WIRE_BYTES`` each way).  Where the search finds no schedule (it does not
  for 54 devices), or above MCTS_MAX_WORLD devices (124 took 128 s to fail on this machine),
  the classical 2D-mesh schedule on the squarest grid stands in (rsgcm/classical.py
  ``mesh_2d``), and the result says so.
"""

from __future__ import annotations

from control_plane.model.topology import Topology
from host_stack.collectives.p2p import (
    NOTICE_WIRE_BYTES,
    ack_wire_bytes,
    gloo_ring_iterations,
    gloo_send_wire_bytes,
    message_wire_bytes,
)
from host_stack.collectives.ring import DEFAULT_CHUNK_BYTES
from simulation.engine import Stage, Transfer
from simulation.gloo_rings import ELEMENT, RingAllReduce
from simulation.rat_traffic import stage_pairs
from simulation.routes import Router

# host messages per segment of gloo's ring all-reduce on its dependency chain when its steps
# run rank by rank: the receiver's notice and the data
GLOO_HOST_MESSAGES = 2
MCTS_MAX_WORLD = 64


def _messages(nbytes: float, chunk: int) -> list[int]:
    """The p2p messages one segment of ``nbytes`` is sent in (chunks of ``chunk``)."""
    n = int(nbytes)
    if n <= 0:
        return []
    full, rest = divmod(n, chunk)
    return [chunk] * full + ([rest] if rest else [])


class Traffic:
    """Per-stage bytes between rank pairs, turned into routed transfers (data and ACKs)."""

    def __init__(self, topo: Topology, workers: list[str], routing: str) -> None:
        self.router = Router(topo, routing)
        self.workers = workers

    def stage(self, name: str, pairs: dict[tuple[int, int], list[int] | tuple[int, int]],
              chain_hops: int) -> Stage:
        """``pairs``: (src rank, dst rank) -> (message wire bytes, ACK wire bytes) summed."""
        out = Stage(name, chain_hops=chain_hops)
        for (a, b), (data, acks) in sorted(pairs.items()):
            src, dst = self.workers[a], self.workers[b]
            out.transfers.append(Transfer(self.router.path(src, dst), data, acks=acks))
        return out


def _add(pairs: dict, a: int, b: int, messages: list[int], times: float = 1.0) -> None:
    data = sum(message_wire_bytes(m) for m in messages) * times
    acks = sum(ack_wire_bytes(m) for m in messages) * times
    old = pairs.get((a, b), (0.0, 0.0))
    pairs[(a, b)] = (old[0] + data, old[1] + acks)


def ring_stages(topo: Topology, workers: list[str], model_bytes: int, routing: str = "ecmp",
                chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> list[Stage]:
    n = len(workers)
    if n < 2:
        return []
    seg = model_bytes / n  # tensor_split: segments differ by at most one element
    messages = _messages(seg, chunk_bytes)
    pairs: dict = {}
    for i in range(n):
        _add(pairs, i, (i + 1) % n, messages, 2 * (n - 1))
    stage = Traffic(topo, workers, routing).stage("ring", pairs, 2 * (n - 1))
    stage.messages = 2 * (n - 1)  # each step's first chunk waits for the one before it
    return [stage]


def tree_stages(topo: Topology, workers: list[str], model_bytes: int, routing: str = "ecmp"
                ) -> list[Stage]:
    from host_stack.collectives.rat import hierarchy

    n = len(workers)
    if n < 2:
        return []
    messages = _messages(model_bytes / n, 1 << 62)  # one isend per slice
    up: list[dict] = []
    for counts in stage_pairs(hierarchy(topo.graph, workers)):
        pairs: dict = {}
        for (child, parent), trees in counts.items():
            _add(pairs, child, parent, messages, trees)
        up.append(pairs)
    traffic = Traffic(topo, workers, routing)
    stages = [traffic.stage(f"reduce{k}", p, 1) for k, p in enumerate(up) if p]
    down = [{(b, a): v for (a, b), v in p.items()} for p in reversed(up) if p]
    stages += [traffic.stage(f"broadcast{k}", p, 1) for k, p in enumerate(down)]
    for stage in stages:  # a rank posts a stage's messages together: the first one waits
        stage.messages = 1
    return stages


RingSteps = list[list[tuple[tuple[int, ...], int]]]  # per step: (ring ranks, block)


def rsgcm_schedule(world: int, seed: int) -> tuple[RingSteps, int, str]:
    """(steps of (ring ranks, block), blocks, which schedule) for ``world`` ranks."""
    from host_stack.collectives.rsgcm.plan import plan_schedule
    from host_stack.collectives.rsgcm.space import grid_shape

    try:
        if world > MCTS_MAX_WORLD:
            raise ValueError(f"{world} devices: above {MCTS_MAX_WORLD}")
        sched = plan_schedule(world, s=2, seed=seed)
        index = {d: i for i, d in enumerate(sched.devices)}
        steps = [[(tuple(sorted(index[d] for d in ring)), b) for ring, b in step.rings]
                 for step in sched.steps]
        return steps, sched.nblocks, "mcts"
    except ValueError:
        rows, cols = grid_shape(world)
        row_rings = [tuple(range(r * cols, (r + 1) * cols)) for r in range(rows)]
        col_rings = [tuple(range(c, world, cols)) for c in range(cols)]
        steps = [[*((r, 0) for r in row_rings), *((c, 1) for c in col_rings)],
                 [*((c, 0) for c in col_rings), *((r, 1) for r in row_rings)]]
        return steps, 2, f"2d-mesh {rows}x{cols}"


def rsgcm_rings(topo: Topology, workers: list[str], model_bytes: int, seed: int = 0,
                routing: str = "ecmp"
                ) -> tuple[list[RingAllReduce], dict[tuple[str, str], tuple[str, ...]],
                           list[Stage], str]:
    """RSGCM's schedule as gloo ring all-reduces (simulation/gloo_rings.py), the routes
    between ring neighbours both ways, its bytes per step as stages (data with its SEND_READY
    notices and ACKs from each member to the one before it, RECV_READY notices back), and
    which schedule ran."""
    n = len(workers)
    if n < 2:
        return [], {}, [], "none"
    steps, nblocks, kind = rsgcm_schedule(n, seed)
    elements = -(-model_bytes // ELEMENT)
    blocks = [(elements // nblocks + (b < elements % nblocks)) * ELEMENT
              for b in range(nblocks)]  # torch.tensor_split's
    router = Router(topo, routing)
    rings, paths, stages = [], {}, []
    for k, step in enumerate(steps):
        stage = Stage(f"step{k}")
        for ring, b in step:
            f = len(ring)
            if f < 2 or not blocks[b]:
                continue
            stage.chain_hops = max(stage.chain_hops, 2 * (f - 1))
            members = tuple(workers[r] for r in ring)
            rings.append(RingAllReduce(len(stages), members, blocks[b]))
            for p, host in enumerate(members):
                to = members[(p - 1) % f]
                for pair in ((host, to), (to, host)):
                    if pair not in paths:
                        paths[pair] = router.path(*pair)
                sent = [s for s, _ in gloo_ring_iterations(blocks[b], ELEMENT, f, p) if s]
                stage.messages = max(stage.messages, GLOO_HOST_MESSAGES * len(sent))
                stage.transfers.append(Transfer(
                    paths[(host, to)], sum(map(gloo_send_wire_bytes, sent)),
                    acks=sum(ack_wire_bytes(m) for m in sent)))
                stage.transfers.append(Transfer(paths[(to, host)],
                                                len(sent) * NOTICE_WIRE_BYTES))
        if stage.transfers:  # a step whose blocks are all empty sends nothing
            stages.append(stage)
    return rings, paths, stages, kind


def gloo_messages(rings: list[RingAllReduce]) -> int:
    """Data messages the ring all-reduces send in all."""
    return sum(1 for ring in rings for p in range(len(ring.members))
               for s, _ in gloo_ring_iterations(ring.nbytes, ELEMENT, len(ring.members), p)
               if s)
