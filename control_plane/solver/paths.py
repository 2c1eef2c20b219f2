"""Bounded, deterministic path sets P_{s,w}, P_{v,w}, P_{s,v} of the InArt model.

A path set holds up to k minimum-hop paths from a source to a destination whose intermediate
nodes are all switches (hosts never forward).  Minimum-hop paths are what fat-tree and
leaf-spine routing (ECMP) use, and keeping only them keeps the LP small.  All minimum-hop paths
(up to ENUM_LIMIT) are enumerated in natural id order along the BFS distance DAG, then k are
picked greedily to share as few links as possible (lexicographic order alone would give k paths
through the same aggregation switch); the same topology always gives the same sets.

`routes="simple"` takes every simple path instead (up to SIMPLE_LIMIT per pair, beyond which
it refuses rather than drop one), fewest hops first.  That is the whole routing freedom of a
plan: a walk that repeats a node uses every link of the simple path left when its loop is
cut out, and more, and its interior switches carry no load unless they aggregate, so some
optimal plan takes only simple paths.  The exact MILP of `inart bench solver` uses it with
every switch a candidate (`exact_paths`); minimum-hop sets miss plans that go around a
cycle to avoid a bottleneck.

A flow aggregated at v reaches v on a segment (`segments`): only those paths to v after
which the packets v passes on unaggregated still have a route to the PS that revisits no
switch of the segment (model/unaggregated.py: switches forward them by address pair alone),
and a switch with no such segment is no candidate.  Minimum-hop sets never lose one; a
detour can (every simple path, any switch a candidate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

from control_plane.model.topology import Topology, TopologyError, natural_key
from control_plane.model.unaggregated import unaggregated_tail

Path_ = tuple[str, ...]
ENUM_LIMIT = 64
SIMPLE_LIMIT = 4096  # simple paths per pair: more (large fabrics) is no exact-MILP instance
ROUTES = ("min-hop", "simple")


@dataclass(frozen=True)
class WorkerClass:
    """Workers that every LP may treat as one: each has a single uplink, all to the same
    switch, so their path sets agree after the first hop and each uplink carries exactly f
    (the worker's whole gradient) whatever the plan decides.  A multi-homed worker is a class
    of its own (`single` False: its first hops are real routing decisions)."""

    rep: str
    members: tuple[str, ...]
    single: bool
    uplink: float  # least spare uplink capacity of the members: no plan's rate exceeds it

    def path_for(self, member: str, path: Path_) -> Path_:
        """The representative's path `path` as member `member` takes it."""
        return path if member == self.rep else (member, *path[1:])


class PathSets:
    """Lazily computed k-shortest path sets of one topology."""

    def __init__(self, topo: Topology, k: int | None = 3, candidates: str = "all",
                 routes: str = "min-hop") -> None:
        if k is not None and k < 1:
            raise ValueError(f"paths per pair k={k}: expected >= 1 (or None: all)")
        if candidates not in ("all", "chosen", "any"):
            raise ValueError(f"candidates '{candidates}': expected 'all', 'chosen' or 'any'")
        if routes not in ROUTES:
            raise ValueError(f"routes '{routes}': expected one of {ROUTES}")
        self.topo = topo
        self.k = k
        self.candidates = candidates
        self.routes = routes
        self._succ = {
            u: sorted((b for (_, b) in topo.digraph.out_edges(u)), key=natural_key)
            for u in topo.nodes
        }
        self._pred = {
            u: sorted((a for (a, _) in topo.digraph.in_edges(u)), key=natural_key)
            for u in topo.nodes
        }
        self.all = lru_cache(maxsize=None)(self._enumerate)
        self.get = lru_cache(maxsize=None)(self._pick)
        self.segments = lru_cache(maxsize=None)(self._segments)
        self.switches_between = lru_cache(maxsize=None)(self._switches_between)
        self._dist_to = lru_cache(maxsize=None)(self._distances)  # one BFS per destination
        self.arcs = lru_cache(maxsize=None)(lambda path: tuple(arcs(path)))  # packing's hot loop
        self._hops: dict[str, dict[str, list[str]]] = {}

    @cached_property
    def classes(self) -> list[WorkerClass]:
        """Workers grouped by their single uplink switch (see WorkerClass)."""
        groups: dict[tuple[str, str], list[str]] = {}
        for w in self.topo.workers:
            out = self._succ[w]
            single = len(out) == 1 and self.topo.nodes[out[0]].kind == "switch"
            groups.setdefault(("uplink", out[0]) if single else ("own", w), []).append(w)
        classes = []
        for (how, end), members in groups.items():
            single = how == "uplink"
            uplink = min(self.topo.links[(w, end)].spare for w in members) if single else math.inf
            classes.append(WorkerClass(members[0], tuple(members), single, max(uplink, 0.0)))
        return classes

    def _distances(self, dst: str) -> dict[str, int]:
        """Hop distance to dst along arcs, entering dst or traversing switches only."""
        dist = {dst: 0}
        frontier = [dst]
        while frontier:
            nxt = []
            for v in frontier:
                if v != dst and self.topo.nodes[v].kind != "switch":
                    continue
                for u in self._pred[v]:
                    if u not in dist:
                        dist[u] = dist[v] + 1
                        nxt.append(u)
            frontier = nxt
        return dist

    @property
    def describe(self) -> str:
        """The path set in words, for reports: which paths and how many per pair."""
        which = "all simple paths" if self.routes == "simple" else "minimum-hop paths"
        per = "all per pair" if self.k is None else f"up to {self.k} per pair"
        where = {"any": "any switch", "all": "switches on minimum-hop paths",
                 "chosen": "switches on the chosen paths"}[self.candidates]
        return f"{which} ({per}; aggregation at {where})"

    def _pick(self, src: str, dst: str) -> tuple[Path_, ...]:
        """Up to k of the paths, each sharing the fewest links with those chosen (all of
        them, in enumeration order, when k is None)."""
        if self.k is None:
            return self.all(src, dst)
        pool = [(p, set(arcs(p))) for p in self.all(src, dst)]
        chosen: list[Path_] = []
        used: set[tuple[str, str]] = set()
        while pool and len(chosen) < self.k:
            best = min(pool, key=lambda item: len(item[1] & used))
            pool.remove(best)
            chosen.append(best[0])
            used |= best[1]
        return tuple(chosen)

    def _segments(self, src: str, v: str, dst: str) -> tuple[Path_, ...]:
        """The paths src -> v (of `get`) on which a flow src -> dst may reach its aggregation
        switch v: those after which the packets v passes on unaggregated still have a route
        to dst (model/unaggregated.py; the stream paths v -> dst are tried first).  A detour
        can cut v off (fig1's w5 reaching v1 through v2, which every path from v1 to a PS
        crosses); minimum-hop paths to a v on a minimum-hop path src -> dst never do
        (`_on_shortest`), and are not searched."""
        if v not in self._dist_to(dst):
            return ()
        if self.routes == "min-hop" and self._on_shortest(src, v, dst):
            return self.get(src, v)
        return tuple(p for p in self.get(src, v)
                     if unaggregated_tail(self.topo, p, dst, self.get(v, dst)) is not None)

    def _on_shortest(self, src: str, v: str, dst: str) -> bool:
        """Whether v lies on a minimum-hop path src -> dst.  Then every minimum-hop path
        src -> v leaves v a route on: a switch x before v on it has d(x, dst) >= d(src, dst)
        - d(src, x) > d(src, dst) - d(src, v) = d(v, dst), and a minimum-hop path v -> dst
        only passes switches at most d(v, dst) from dst."""
        to_v, to_dst = self._dist_to(v), self._dist_to(dst)
        return src in to_v and to_v[src] + to_dst[v] == to_dst.get(src, -1)

    def _switches_between(self, src: str, dst: str) -> list[str]:
        """Candidate aggregation switches for src -> dst: those on any minimum-hop path
        ("all"), on the k chosen paths ("chosen"), or every switch ("any": a detour is fine),
        each only if some segment to it is installable (`segments`)."""
        if self.candidates == "any":
            pool_nodes = self.topo.switches
        else:
            pool = self.all(src, dst) if self.candidates == "all" else self.get(src, dst)
            found = {n for p in pool for n in p[1:-1]}
            if self.topo.nodes[dst].kind == "switch":
                found.add(dst)
            pool_nodes = sorted(found, key=natural_key)
        if self.routes == "min-hop" and self.candidates != "any":
            return pool_nodes  # on minimum-hop paths src -> dst: `_on_shortest`
        return [v for v in pool_nodes if self.segments(src, v, dst)]

    def _enumerate(self, src: str, dst: str) -> tuple[Path_, ...]:
        """All minimum-hop paths (up to ENUM_LIMIT) in natural id order, depth first; with
        routes "simple", every simple path (`_simple`)."""
        if src == dst:
            return ((src,),)
        dist = self._dist_to(dst)
        if src not in dist:
            raise TopologyError(f"no path from '{src}' to '{dst}' through switches")
        if self.routes == "simple":
            return self._simple(src, dst)
        hops = self._hops.setdefault(dst, {})  # next hops on the distance DAG, filled lazily
        nodes, succ = self.topo.nodes, self._succ

        def downhill(u: str) -> list[str]:
            if u not in hops:
                hops[u] = [v for v in succ[u] if dist.get(v) == dist[u] - 1 and
                           (v == dst or nodes[v].kind == "switch")]
            return hops[u]

        out: list[Path_] = []
        stack: list[Path_] = [(src,)]
        while stack and len(out) < ENUM_LIMIT:
            path = stack.pop()
            if path[-1] == dst:
                out.append(path)
                continue
            stack.extend(path + (v,) for v in reversed(downhill(path[-1])))
        return tuple(out)

    def _simple(self, src: str, dst: str) -> tuple[Path_, ...]:
        """Every simple path from src to dst through switches, fewest hops first (natural id
        order among equals); more than SIMPLE_LIMIT is refused, never cut."""
        nodes, succ = self.topo.nodes, self._succ
        out: list[Path_] = []
        stack: list[Path_] = [(src,)]
        while stack:
            path = stack.pop()
            if path[-1] == dst:
                out.append(path)
                if len(out) > SIMPLE_LIMIT:
                    raise ValueError(f"more than {SIMPLE_LIMIT} simple paths from '{src}' to "
                                     f"'{dst}': all simple paths are for small topologies")
                continue
            stack.extend(path + (v,) for v in reversed(succ[path[-1]]) if v not in path
                         and (v == dst or nodes[v].kind == "switch"))
        return tuple(sorted(out, key=len))  # stable: depth-first order among equal lengths


def simple_paths_at_most(topo: Topology, limit: int) -> bool:
    """Whether every source (worker or switch) reaches every destination (PS or switch) by
    at most `limit` simple paths through switches; stops counting at the first pair above.
    Small irregular graphs pass (16 at most on 5-7 switches), fat-trees fail at once
    (fattree:4: over a thousand between hosts of different pods)."""
    nodes = topo.nodes
    succ = {u: [b for (_, b) in topo.digraph.out_edges(u)] for u in nodes}
    switches = set(topo.switches)
    for src in [*topo.workers, *topo.switches]:
        for dst in [*topo.pss, *topo.switches]:
            if src == dst:
                continue
            found, stack = 0, [(src, frozenset((src,)))]
            while stack:
                u, seen = stack.pop()
                for v in succ[u]:
                    if v == dst:
                        found += 1
                        if found > limit:
                            return False
                    elif v in switches and v not in seen:
                        stack.append((v, seen | {v}))
    return True


def exact_paths(topo: Topology) -> PathSets:
    """The path sets of the exact MILP: every simple path, every switch a candidate that
    some installable segment reaches (`PathSets.segments`)."""
    return PathSets(topo, k=None, candidates="any", routes="simple")


def arcs(path: Path_) -> list[tuple[str, str]]:
    """The directed links a path uses."""
    return list(zip(path, path[1:], strict=False))
