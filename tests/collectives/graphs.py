"""Tiny topology builders for the collectives tests, until control_plane.model.topology lands."""

from __future__ import annotations

import networkx as nx


def fattree(k: int) -> nx.Graph:
    """Classic k-ary fat-tree: (k/2)^2 cores, k pods of k/2 agg + k/2 edge, k/2 hosts each."""
    g = nx.Graph()
    half = k // 2
    cores = [f"c{i}" for i in range(half * half)]
    g.add_nodes_from(cores, kind="switch")
    h = 0
    for p in range(k):
        aggs = [f"a{p}_{i}" for i in range(half)]
        edges = [f"e{p}_{i}" for i in range(half)]
        g.add_nodes_from(aggs + edges, kind="switch")
        for i, a in enumerate(aggs):
            g.add_edges_from((a, cores[i * half + j]) for j in range(half))
            g.add_edges_from((a, e) for e in edges)
        for e in edges:
            for _ in range(half):
                g.add_node(f"h{h:03d}", kind="worker")
                g.add_edge(f"h{h:03d}", e)
                h += 1
    return g


def leafspine(leaves: int, spines: int, hosts: int) -> nx.Graph:
    """Every leaf linked to every spine, ``hosts`` workers per leaf."""
    g = nx.Graph()
    for s in range(spines):
        g.add_node(f"s{s}", kind="switch")
    for leaf in range(leaves):
        g.add_node(f"l{leaf}", kind="switch")
        g.add_edges_from((f"l{leaf}", f"s{s}") for s in range(spines))
        for i in range(hosts):
            w = f"h{leaf * hosts + i:03d}"
            g.add_node(w, kind="worker")
            g.add_edge(w, f"l{leaf}")
    return g
