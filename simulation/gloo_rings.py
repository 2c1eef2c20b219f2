"""RSGCM rank by rank and message by message: every ring of a step is one gloo ring all-reduce,
run by SimGrid actors on each member's host as gloo runs it, instead of a step's rings moving
their bytes as one stage (engine.py's lockstep).

What one rank does in gloo's ring all-reduce (gloo's allreduce.cc; segment lengths from
host_stack/collectives/p2p.py ``gloo_ring_iterations``): the buffer is cut into 2f segments;
in each phase (reduce-scatter, then all-gather) iteration i first (from i = 2) waits for its
receive of iteration i - 2 and its send of iteration i - 2, then (below 2f - 2) posts the
receive of segment i from rank + 1 and the send of segment i to rank - 1.  So two segments
are in flight at most (gloo's double buffer), and a segment is sent on only once it is in.

gloo's TCP rendezvous: a receive sends its sender a NOTIFY_RECV_READY notice; a send sends
its receiver a NOTIFY_SEND_READY one and writes the data only once the receiver's notice is
in; the send is done once written (the kernel's socket buffer takes it).  So here:

- a notice is a transfer of one frame (``NOTICE_WIRE_BYTES``) from the receiver to the
  sender, sent as soon as the receive is posted, whether or not the sender has got there;
- the data starts once its send is posted and the notice is in (its transfer's end, the
  route's latency, and the host's time to react: ``overhead_s``), and once the message before
  it on the same connection is through: a connection is one TCP stream, its messages go one
  after another.  Its SEND_READY notice and its ACKs ride with it (as ranks.py's ACKs do);
- a receive is done at its transfer's end, the route's latency and the woken thread's
  ``overhead_s``; a send when the notice is in (above);
- a rank starts its next step once its own rings of this step are done (the executor,
  host_stack/collectives/rsgcm/executor.py, waits for its own rings' works only).

Two all-reduces a step runs on the same ranks share one process group and so one TCP
connection per pair in the host stack; here each has its own (their messages share the links
max-min instead of taking turns message by message on one stream).

Sharing and the time unit as in engine.py; the unit here is one message alone on its route's
slowest link, so SimGrid's precision (flows ending within 0.5% of the unit end together) is a
fraction of a message.  A wait shorter than the precision lasts the precision.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from host_stack.collectives.p2p import (
    NOTICE_WIRE_BYTES,
    gloo_recv_wire_bytes,
    gloo_ring_iterations,
    gloo_send_wire_bytes,
)
from simulation.engine import Network, in_child, new_engine
from simulation.ranks import platform

ELEMENT = 4  # fp32 gradients


@dataclass(frozen=True)
class RingAllReduce:
    """One gloo ring all-reduce of ``nbytes`` over ``members`` (hosts, in the group's rank
    order) in step ``step`` of a schedule."""

    step: int
    members: tuple[str, ...]
    nbytes: int


def data_bytes(length: int) -> float:
    """What one data message of ``length`` bytes moves here: its frames, both notices and the
    receiver's ACKs."""
    return gloo_send_wire_bytes(length) + gloo_recv_wire_bytes(length)


@dataclass
class _Connection:
    """One rank's sending side of one ring all-reduce, shared by the actors that play it
    (SimGrid runs one actor at a time, so plain fields are safe; a semaphore is taken only to
    block, each costing a thread switch): sends posted, RECV_READY notices' arrival times in
    order, sends written."""

    to_send: object  # the connection's actor waits on it for a send posted and noticed
    to_loop: object  # the ring's loop waits on it for a send written
    issued: int = 0
    arrivals: deque = field(default_factory=deque)
    sent: int = 0
    wait_issue: bool = False
    wait_sent: bool = False

    def poke(self) -> None:
        """A send was posted or noticed: wake the connection's actor if it waits."""
        if self.wait_issue:
            self.wait_issue = False
            self.to_send.release()


def run_gloo_rings(net: Network, rings: list[RingAllReduce],
                   paths: dict[tuple[str, str], tuple[str, ...]], latency_s: float,
                   overhead_s: float) -> list[float]:
    """Seconds from the start at which each step's last rank is done (latency and host time
    included); the schedule ends at the largest.  ``paths``: the route of every (sender,
    receiver) pair of neighbours in a ring, both ways; ``latency_s`` per hop."""
    return in_child(_simulate, net, rings, paths, latency_s, overhead_s)


def _unit(net: Network, rings: list[RingAllReduce],
          paths: dict[tuple[str, str], tuple[str, ...]]) -> float:
    """Seconds of the longest message alone on its route's slowest link."""
    unit = 0.0
    for ring in rings:
        f = len(ring.members)
        longest = max((s for s, _ in gloo_ring_iterations(ring.nbytes, ELEMENT, f, 0)),
                      default=0)
        for p, host in enumerate(ring.members):
            path = paths[(host, ring.members[(p - 1) % f])]
            slowest = min(net.links[hop] for hop in zip(path, path[1:], strict=False))
            if slowest > 0:
                unit = max(unit, data_bytes(longest) / slowest)
    return unit if unit > 0 else 1.0


def _simulate(net: Network, rings: list[RingAllReduce],
              paths: dict[tuple[str, str], tuple[str, ...]], latency_s: float,
              overhead_s: float) -> list[float]:
    sg, engine = new_engine()
    unit = _unit(net, rings, paths)
    hosts = platform(sg, net, list(paths.values()))
    lat = {pair: (len(path) - 1) * latency_s / unit for pair, path in paths.items()}
    # a notice is one frame: stored and forwarded whole at every hop
    notice = {pair: lat[pair] + sum(NOTICE_WIRE_BYTES / net.links[hop] for hop in
                                    zip(path, path[1:], strict=False)) / unit
              for pair, path in paths.items()}
    host_s = overhead_s / unit
    steps = max((r.step for r in rings), default=-1) + 1
    mine: dict[str, list[list[int]]] = {}
    for i, ring in enumerate(rings):
        for host in ring.members:
            mine.setdefault(host, [[] for _ in range(steps)])[ring.step].append(i)
    ends = [0.0] * steps
    conns: dict[tuple[int, str], _Connection] = {}

    def conn(op: int, host: str) -> _Connection:
        """The connection on which ``host`` sends in ring all-reduce ``op``."""
        if (op, host) not in conns:
            conns[(op, host)] = _Connection(sg.Semaphore(0), sg.Semaphore(0))
        return conns[(op, host)]

    def wake(at: float) -> None:
        if at > engine.clock:
            sg.this_actor.sleep_until(at)

    def connection(me: str, op: int, to: str, sends: list[tuple[int, int]]) -> None:
        """gloo's handling of this rank's sends on one connection: each is written once
        posted and noticed, and leaves once the one before it is through (one TCP stream)."""
        c = conn(op, me)
        for k, (j, length) in enumerate(sends):
            while c.issued <= k or not c.arrivals:
                c.wait_issue = True
                c.to_send.acquire()
            wake(c.arrivals.popleft() + host_s)
            c.sent += 1  # written to the socket
            if c.wait_sent:
                c.wait_sent = False
                c.to_loop.release()
            sg.Mailbox.by_name(f"d{op}:{to}:{j}").put(j, max(1, int(round(
                data_bytes(length) / unit))))

    def ring_loop(me: str, op: int) -> None:
        ring = rings[op]
        f = len(ring.members)
        p = ring.members.index(me)
        to, frm = ring.members[(p - 1) % f], ring.members[(p + 1) % f]
        its = gloo_ring_iterations(ring.nbytes, ELEMENT, f, p)
        sends = [(j, s) for j, (s, _) in enumerate(its) if s > 0]
        mine_c, theirs = conn(op, me), conn(op, frm)
        if sends:
            sg.Actor.create(f"{me}>{to}:{op}", hosts[me], connection, me, op, to, sends)
        posted: dict[int, tuple] = {}
        n = len(its) // 2  # iterations that post operations, per phase
        done = 0  # sends this loop has waited for
        for phase in (0, 1):
            for i in range(n + 2):
                if i >= 2:
                    j = phase * n + i - 2
                    if its[j][1] > 0:
                        comm, _data = posted.pop(j)
                        comm.wait()
                        wake(comm.finish_time + lat[(frm, me)] + host_s)
                    if its[j][0] > 0:
                        done += 1
                        while mine_c.sent < done:
                            mine_c.wait_sent = True
                            mine_c.to_loop.acquire()
                if i < n:
                    j = phase * n + i
                    if its[j][1] > 0:
                        posted[j] = sg.Mailbox.by_name(f"d{op}:{me}:{j}").get_async()
                        theirs.arrivals.append(engine.clock + notice[(me, frm)])
                        theirs.poke()
                    if its[j][0] > 0:
                        mine_c.issued += 1
                        mine_c.poke()

    def rank(me: str) -> None:
        for k, ops in enumerate(mine[me]):
            loops = [sg.Actor.create(f"{me}:{op}", hosts[me], ring_loop, me, op)
                     for op in ops]
            for actor in loops:
                actor.join()
            if ops:
                ends[k] = max(ends[k], engine.clock)

    for host in mine:
        sg.Actor.create(host, hosts[host], rank, host)
    engine.run()
    return [end * unit for end in ends]
