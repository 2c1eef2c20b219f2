"""Bounded, deterministic path sets P_{s,w}, P_{v,w}, P_{s,v} of the InArt model.

A path set holds up to k minimum-hop paths from a source to a destination whose intermediate
nodes are all switches (hosts never forward).  Minimum-hop paths are what fat-tree and
leaf-spine routing (ECMP) use, and keeping only them keeps the LP small.  All minimum-hop paths
(up to ENUM_LIMIT) are enumerated in natural id order along the BFS distance DAG, then k are
picked greedily to share as few links as possible (lexicographic order alone would give k paths
through the same aggregation switch); the same topology always gives the same sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

from control_plane.model.topology import Topology, TopologyError, natural_key

Path_ = tuple[str, ...]
ENUM_LIMIT = 64


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

    def __init__(self, topo: Topology, k: int = 3, candidates: str = "all") -> None:
        if k < 1:
            raise ValueError(f"paths per pair k={k}: expected >= 1")
        if candidates not in ("all", "chosen", "any"):
            raise ValueError(f"candidates '{candidates}': expected 'all', 'chosen' or 'any'")
        self.topo = topo
        self.k = k
        self.candidates = candidates
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

    def _pick(self, src: str, dst: str) -> tuple[Path_, ...]:
        """Up to k of the minimum-hop paths, each sharing the fewest links with those chosen."""
        pool = [(p, set(arcs(p))) for p in self.all(src, dst)]
        chosen: list[Path_] = []
        used: set[tuple[str, str]] = set()
        while pool and len(chosen) < self.k:
            best = min(pool, key=lambda item: len(item[1] & used))
            pool.remove(best)
            chosen.append(best[0])
            used |= best[1]
        return tuple(chosen)

    def _switches_between(self, src: str, dst: str) -> list[str]:
        """Candidate aggregation switches for src -> dst: those on any minimum-hop path
        ("all"), on the k chosen paths ("chosen"), or every switch ("any": a detour is fine)."""
        if self.candidates == "any":
            return self.topo.switches
        pool = self.all(src, dst) if self.candidates == "all" else self.get(src, dst)
        found = {n for p in pool for n in p[1:-1]}
        if self.topo.nodes[dst].kind == "switch":
            found.add(dst)
        return sorted(found, key=natural_key)

    def _enumerate(self, src: str, dst: str) -> tuple[Path_, ...]:
        """All minimum-hop paths (up to ENUM_LIMIT) in natural id order, depth first."""
        if src == dst:
            return ((src,),)
        dist = self._dist_to(dst)
        if src not in dist:
            raise TopologyError(f"no path from '{src}' to '{dst}' through switches")
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

def arcs(path: Path_) -> list[tuple[str, str]]:
    """The directed links a path uses."""
    return list(zip(path, path[1:], strict=False))
