"""Stages rank by rank (simulation/ranks.py) in phases, for clusters where one SimGrid run of
every rank costs too much.

Why: SimGrid's max-min solver re-solves the constraints an event touched, and all those
connected to them, as one system, round by round, one saturation level a round, each round
scanning every constraint of the system.  Run as one, RAT's trees on a fat-tree are one
system from the moment the first ranks start their cross-pod stage, while the others are
still in their rack and pod stages: every event then re-solves every flow of the cluster over
the union of all their levels (fattree:32: 8,188 ranks, 47,432 loaded link directions and
about 10,000 levels in the cross-pod stage alone; docs/simulation.md).

Phases: consecutive stages whose transfers fall into groups of ranks that share no link and
no rank (RAT's rack and pod stages on a fat-tree: a group a pod) run group by group, each
group in its own SimGrid process; consecutive stages that join every rank into one group
(the root's) run together.  Each rank starts a phase when it was done with its last stage of
the one before (rounded to the window: each distinct start is an event), so the ranks keep
their own pace across phases, and a transfer still waits for both of its ends.

What this leaves out: a send is done once its receiver has posted, so a rank's last data of a
phase can still be on the wire when it starts the next; here it does not share links with
the next phase's transfers, nor do the phases' transfers of ranks that are still in the
phase before.  Measured against one run of every rank in docs/simulation.md ("Wall time at
scale").
"""

from __future__ import annotations

from simulation.engine import Network, Stage, in_child, lower_bound
from simulation.ranks import WINDOW, Carried, simulate_ranks


def groups(stages: list[Stage]) -> list[set[str]]:
    """The ranks (transfers' end hosts) the stages' transfers join into groups: two transfers
    are in one group when they share a rank or a link direction."""
    parent: dict[object, object] = {}

    def find(x: object) -> object:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for stage in stages:
        for t in stage.transfers:
            if t.size + t.acks < 1:
                continue
            root = find(t.path[0])
            for node in (t.path[-1], *zip(t.path, t.path[1:], strict=False)):
                other = find(node)
                if other != root:
                    parent[other] = root
    ranks = {t.path[end] for st in stages for t in st.transfers if t.size + t.acks >= 1
             for end in (0, -1)}
    out: dict[object, set[str]] = {}
    for r in ranks:
        out.setdefault(find(r), set()).add(r)
    return list(out.values())


def phases(stages: list[Stage]) -> list[list[int]]:
    """Stage indices, cut where the stages go from splitting the ranks into several groups to
    joining them into one, and back."""
    out: list[tuple[bool, list[int]]] = []
    for k, stage in enumerate(stages):
        split = len(groups([stage])) > 1
        if out and out[-1][0] == split:
            out[-1][1].append(k)
        else:
            out.append((split, [k]))
    return [ks for _, ks in out]


def run_phases(net: Network, stages: list[Stage], window: float = WINDOW) -> list[float]:
    """Seconds from the start at which each stage's last transfer is in (bandwidth only), as
    ``ranks.run_ranks`` gives them, phase by phase and group by group."""
    window_s = window * sum(lower_bound(net, st) for st in stages if st.transfers)
    ends = [0.0] * len(stages)
    done: dict[str, float] = {}
    carried: Carried = {}
    for ks in phases(stages):
        part = [stages[k] for k in ks]
        left: Carried = {}
        for group in groups(part):
            mine = [Stage(st.name, [t for t in st.transfers if t.path[0] in group],
                          st.chain_hops, st.messages, st.route_hops) for st in part]
            stage_ends, group_done, group_left = in_child(
                simulate_ranks, net, mine, window_s, {r: done[r] for r in group if r in done},
                {r: carried[r] for r in group if r in carried})
            for k, end in zip(ks, stage_ends, strict=True):
                ends[k] = max(ends[k], end)
            done.update(group_done)
            left.update(group_left)
        carried = left
    return ends
