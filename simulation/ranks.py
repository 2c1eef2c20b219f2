"""Stages run rank by rank: one SimGrid actor per rank, each starting its next stage as soon as
its own transfers of the last one are done, instead of every rank waiting for the slowest
transfer of the whole stage (engine.py's lockstep).  The RAT tree of the host stack
(host_stack/collectives/tree.py) works so: a rank posts a stage's sends and receives, waits
for its own, and goes on.

Each transfer is a rendezvous on its own mailbox: the receiver posts a get and the sender a put
when each enters the stage, and SimGrid starts the transfer once both are there, as gloo sends
a message only once its receiver has posted the receive.  A rank's stage is done when its
receives are in and every receiver of its sends has posted: gloo completes a send once the
message is written to the socket, and the kernel's send buffer (which Linux grows to
megabytes) takes a stage's messages, so the sender goes on while its data is still on the
wire.  Latency and the hosts' time per message are the caller's, added per stage as the
lockstep engine's are (simulation/run.py): a sleep shorter than SimGrid's precision (the
window within which flows end together, what keeps large runs fast) would last that window.

Routes: a full zone with one host per rank and one route per (sender, receiver), the
transfer's own path (a pair's path is the same in every stage).  Sharing and time unit as in
engine.py (the unit: the smallest stage's lower bound).

Scale: SimGrid's Python actors run on threads, and every simcall (a mailbox lookup, a
semaphore, a put, a wait) is a switch to SimGrid's maestro and back, so the actors make no
simcall they can do without.  The max-min solver re-solves the whole connected system at
every event, and once the first ranks reach the cross-pod stage every flow is connected, so
the events are what cost at scale: flows that end within ``WINDOW`` of the collective's
scale (the sum of its stages' lower bounds) of each other end together, one event
(docs/simulation.md, "Wall time at scale", has the error this costs).
"""

from __future__ import annotations

from simulation.engine import Network, Stage, in_child, lower_bound, new_engine

WINDOW = 1e-3  # of the collective's scale: flows ending this close together end together


def run_ranks(net: Network, stages: list[Stage], window: float = WINDOW) -> list[float]:
    """Seconds from the start at which each stage's last transfer is in (bandwidth only); the
    collective ends at the largest.  Every transfer's path must run from one rank's host to
    another's.  ``window``: flows ending within this fraction of the sum of the stages'
    lower bounds of each other end together."""
    scale = sum(lower_bound(net, st) for st in stages if st.transfers)
    return in_child(simulate_ranks, net, stages, window * scale)[0]


def platform(sg, net: Network, paths: list[tuple[str, ...]]) -> dict[str, object]:
    """A sealed full zone with one host per rank (each path's ends) and one route per
    (sender, receiver), the first path given for it; the hosts by name."""
    zone = sg.NetZone.create_full_zone("ranks")
    links = {key: sg.LinkInRoute(zone.create_link(f"{key[0]}->{key[1]}", bps).seal())
             for key, bps in net.links.items()}
    hosts = {r: zone.create_host(r, 1.0).seal()
             for r in sorted({end for path in paths for end in (path[0], path[-1])})}
    routed: set[tuple[str, str]] = set()
    for path in paths:
        a, b = path[0], path[-1]
        if (a, b) not in routed:
            route = [links[hop] for hop in zip(path, path[1:], strict=False)]
            zone.add_route(hosts[a].netpoint, hosts[b].netpoint, None, None, route, False)
            routed.add((a, b))
    zone.seal()
    return hosts


Carried = dict[str, list[tuple[tuple[str, ...], float]]]  # rank -> (path, bytes) on the wire


def simulate_ranks(net: Network, stages: list[Stage], window_s: float,
                   starts: dict[str, float] | None = None, carried: Carried | None = None
                   ) -> tuple[list[float], dict[str, float], Carried]:
    """In this process (SimGrid runs once per process): (seconds at which each stage's last
    transfer is in, seconds at which each rank that takes part is done with its last stage,
    and the bytes of its sends still on the wire then).  Flows ending within ``window_s`` of
    each other end together; a rank in ``starts`` begins then (rounded to the window: each
    distinct start is an event), the others at 0, and first sends what ``carried`` has for
    it (sends whose receivers have long posted)."""
    starts, carried = starts or {}, carried or {}
    bounds = [lower_bound(net, st) for st in stages if st.transfers]
    unit = min(bounds, default=1.0)
    sg, engine = new_engine(window_s / unit)
    hosts = platform(sg, net, [t.path for st in stages for t in st.transfers
                               if t.size + t.acks >= 1]
                     + [path for sends in carried.values() for path, _ in sends])
    ranks = sorted(hosts)
    path_of = {f"{k}:{i}": t.path for k, st in enumerate(stages)
               for i, t in enumerate(st.transfers)}
    # per rank, per stage it takes part in: (stage, mailboxes it gets from, (mailbox, size)
    # it puts)
    work: dict[str, list[tuple[int, list[str], list[tuple[str, int]]]]] = {r: [] for r in ranks}
    for k, stage in enumerate(stages):
        mine: dict[str, tuple[list, list]] = {}
        for i, t in enumerate(stage.transfers):
            if t.size + t.acks < 1:
                continue
            a, b = t.path[0], t.path[-1]
            box = f"{k}:{i}"
            mine.setdefault(b, ([], []))[0].append(box)
            mine.setdefault(a, ([], []))[1].append(
                (box, max(1, int(round((t.size + t.acks) / unit)))))
        for r, (gets, puts) in mine.items():
            work[r].append((k, gets, puts))
    ends = [0.0] * len(stages)
    done: dict[str, float] = {}
    left: Carried = {}
    # mailboxes whose receive is posted, and the senders blocked until it is: actors run one
    # at a time, so these need no simcall unless a sender must wait (each simcall is a
    # thread switch to SimGrid's maestro and back)
    posted_boxes: set[str] = set()
    # looked up here, not by the actors: each lookup from an actor is a simcall
    mailbox = {box: sg.Mailbox.by_name(box) for jobs in work.values() for _, gets, _ in jobs
               for box in gets}
    waiting: dict[str, object] = {}

    def rank(r: str) -> None:
        if starts.get(r, 0.0) > 0:
            sg.this_actor.sleep_until(round(starts[r] / window_s) * window_s / unit)
        sent = [sg.Comm.sendto_async(hosts[r], hosts[path[-1]], max(1, int(round(size / unit))))
                for path, size in carried.get(r, ())]
        outgoing = []
        for k, gets, puts in work[r]:
            # the get's second half holds the buffer the comm writes into: keep it alive
            posted = [mailbox[box].get_async() for box in gets]
            for box in gets:
                posted_boxes.add(box)
                if box in waiting:
                    waiting.pop(box).release()
            outgoing += [(box, mailbox[box].put_async(box, size)) for box, size in puts]
            sg.Comm.wait_all([comm for comm, _ in posted])
            for _, data in posted:
                data.get()
            for box, _ in puts:  # a send is done once its receiver has posted (above)
                if box not in posted_boxes:
                    waiting[box] = sem = sg.Semaphore(0)
                    sem.acquire()
            ends[k] = max(ends[k], engine.clock)
        if work[r]:
            done[r] = engine.clock * unit
            left[r] = [(path_of[box], comm.remaining * unit) for box, comm in outgoing
                       if comm.remaining > 0]
        sg.Comm.wait_all([*sent, *(comm for _, comm in outgoing)])

    for r in ranks:
        sg.Actor.create(r, hosts[r], rank, r)
    engine.run()
    return [end * unit for end in ends], done, left
