"""Topology builders (fig1, fat-tree, leaf-spine) and the paper's capacity presets.

`build_topology("fattree:6", ps=4, preset="homogeneous", seed=command_seed(args.seed))` is
what the CLI and the experiments call; a spec that is a file path loads a
hand-written YAML/JSON topology.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from control_plane.model.topology import Link, Node, Topology, TopologyError


@dataclass(frozen=True)
class Preset:
    """Capacities of the InArt emulation (rates scaled by 1/1000, in Mbit/s)."""

    link: float | tuple[float, float]  # a value, or a (low, high) uniform range per link
    ps: float
    switch: float


PRESETS: dict[str, Preset] = {
    "homogeneous": Preset(link=20.0, ps=20.0, switch=9.0),
    "heterogeneous": Preset(link=(10.0, 30.0), ps=20.0, switch=9.0),
}


def fig1() -> Topology:
    """The InArt paper's Fig. 1: links 6, switches 6, PSs 4 (known optimum 2.5)."""
    nodes = [Node("v1", "switch", 6.0), Node("v2", "switch", 6.0),
             Node("s1", "ps", 4.0), Node("s2", "ps", 4.0)]
    nodes += [Node(f"w{i}", "worker") for i in range(1, 7)]
    pairs = [("v1", "v2")] + [(f"w{i}", "v1") for i in range(1, 5)]
    pairs += [("w5", "v2"), ("w6", "v2"), ("s1", "v2"), ("s2", "v2")]
    return Topology(nodes, _duplex(pairs, lambda: 6.0), name="fig1")


def _duplex(pairs: list[tuple[str, str]], capacity) -> list[Link]:
    """Both directions of each physical link, sharing one drawn capacity."""
    links = []
    for a, b in pairs:
        cap = capacity()
        links += [Link(a, b, cap), Link(b, a, cap)]
    return links


def command_seed(seed: int) -> int:
    """The builders' seed for a command's ``--seed``: every command (plan, simulate, emulate,
    install, lab, the inventory's ``seed``) maps it here, so one ``--seed`` is one cluster
    everywhere.  seed + 1: the default 0 keeps the cluster that every command but ``plan``
    drew before, which the measured tables in docs/ were run on."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TopologyError(f"seed={seed!r}: expected an integer >= 0")
    return seed + 1


def _hosts_to_roles(hosts: list[str], ps: int, workers: int | None,
                    rng: random.Random, where: str) -> dict[str, tuple[str, str]]:
    """Seeded choice of which hosts are PSs and workers: host -> (kind, new id)."""
    if ps < 1 or ps >= len(hosts):
        raise TopologyError(f"{where}: ps={ps} must be between 1 and {len(hosts) - 1}")
    ps_hosts = set(rng.sample(hosts, ps))
    rest = [h for h in hosts if h not in ps_hosts]
    if workers is not None:
        if not 1 <= workers <= len(rest):
            raise TopologyError(f"{where}: workers={workers} must be between 1 and {len(rest)}")
        rest = sorted(rng.sample(rest, workers), key=hosts.index)
    roles: dict[str, tuple[str, str]] = {}
    for i, h in enumerate([h for h in hosts if h in ps_hosts], 1):
        roles[h] = ("ps", f"s{i}")
    for i, h in enumerate(rest, 1):
        roles[h] = ("worker", f"w{i}")
    return roles


def _assemble(name: str, switches: list[str], host_links: list[tuple[str, str]],
              fabric: list[tuple[str, str]], hosts: list[str], ps: int, workers: int | None,
              preset: Preset, seed: int) -> Topology:
    """Turn a switch fabric plus hosts into a Topology with roles and preset capacities."""
    rng = random.Random(seed)
    roles = _hosts_to_roles(hosts, ps, workers, rng, name)
    if isinstance(preset.link, tuple):
        low, high = preset.link

        def draw() -> float:
            return round(rng.uniform(low, high), 3)
    else:
        fixed = float(preset.link)

        def draw() -> float:
            return fixed
    nodes = [Node(sw, "switch", preset.switch) for sw in switches]
    nodes += [Node(new, kind, preset.ps if kind == "ps" else None)
              for kind, new in roles.values()]
    pairs = list(fabric) + [(roles[h][1], sw) for h, sw in host_links if h in roles]
    return Topology(nodes, _duplex(pairs, draw), name=name)


def fattree(k: int, ps: int = 4, workers: int | None = None, preset: str = "homogeneous",
            seed: int = 1) -> Topology:
    """Classic k-ary fat-tree: (k/2)^2 cores, k pods of k/2 aggregation and k/2 edge switches,
    k/2 hosts per edge switch (k=6: 9 core, 18 agg, 18 edge, 54 hosts)."""
    if k < 2 or k % 2:
        raise TopologyError(f"fattree: k={k} must be an even number >= 2")
    half = k // 2
    cores = [f"c{i + 1}" for i in range(half * half)]
    aggs, edges, hosts, fabric, host_links = [], [], [], [], []
    for pod in range(k):
        pod_aggs = [f"a{pod * half + i + 1}" for i in range(half)]
        pod_edges = [f"e{pod * half + i + 1}" for i in range(half)]
        aggs += pod_aggs
        edges += pod_edges
        for i, agg in enumerate(pod_aggs):
            fabric += [(agg, cores[i * half + j]) for j in range(half)]
            fabric += [(edge, agg) for edge in pod_edges]
        for edge in pod_edges:
            for _ in range(half):
                host = f"h{len(hosts) + 1}"
                hosts.append(host)
                host_links.append((host, edge))
    return _assemble(f"fattree:{k}", cores + aggs + edges, host_links, fabric, hosts, ps,
                     workers, _preset(preset), seed)


def leafspine(leaves: int, spines: int, hosts_per_leaf: int, ps: int = 2,
              workers: int | None = None, preset: str = "homogeneous", seed: int = 1) -> Topology:
    """Two-tier Clos: every leaf linked to every spine, hosts under leaves."""
    if leaves < 1 or spines < 1 or hosts_per_leaf < 1:
        raise TopologyError("leafspine: leaves, spines and hosts per leaf must be >= 1")
    leaf_ids = [f"l{i + 1}" for i in range(leaves)]
    spine_ids = [f"sp{i + 1}" for i in range(spines)]
    fabric = [(leaf, spine) for leaf in leaf_ids for spine in spine_ids]
    hosts, host_links = [], []
    for leaf in leaf_ids:
        for _ in range(hosts_per_leaf):
            host = f"h{len(hosts) + 1}"
            hosts.append(host)
            host_links.append((host, leaf))
    return _assemble(f"leafspine:{leaves},{spines},{hosts_per_leaf}", spine_ids + leaf_ids,
                     host_links, fabric, hosts, ps, workers, _preset(preset), seed)


def irregular(switches: int, hosts: int, ps: int = 2, workers: int | None = None,
              preset: str = "homogeneous", seed: int = 1) -> Topology:
    """A seeded random switch graph with cycles, the shape of a hand-written cluster: a
    random spanning tree over the switches plus extra switch links (at least one, so at
    least one cycle), and every host on a random switch.  Which hosts are PSs is seeded as
    for the other builders, so PSs land on random switches."""
    if switches < 3 or hosts < 2:
        raise TopologyError(f"irregular: switches={switches} must be >= 3 (a cycle needs "
                            f"three) and hosts={hosts} >= 2")
    rng = random.Random(f"irregular:{switches},{hosts}:{seed}")
    ids = [f"v{i + 1}" for i in range(switches)]
    fabric = [(ids[i], ids[rng.randrange(i)]) for i in range(1, switches)]
    linked = {frozenset(pair) for pair in fabric}
    spare = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]
             if frozenset((a, b)) not in linked]
    fabric += rng.sample(spare, rng.randint(1, max(1, switches - 2)))
    hosts_ids = [f"h{i + 1}" for i in range(hosts)]
    host_links = [(h, rng.choice(ids)) for h in hosts_ids]
    return _assemble(f"irregular:{switches},{hosts}", ids, host_links, fabric, hosts_ids, ps,
                     workers, _preset(preset), seed)


def _preset(name: str) -> Preset:
    if name not in PRESETS:
        raise TopologyError(f"preset '{name}': expected one of {sorted(PRESETS)}")
    return PRESETS[name]


def build_topology(spec: str, ps: int | None = None, workers: int | None = None,
                   preset: str | None = None, seed: int = 1) -> Topology:
    """Build from a spec: fig1 | fattree:K | leafspine:L,S,H | irregular:SW,H |
    path/to/file.{json,yaml}.  The one builder every command uses, so one spec, options and
    ``seed`` give one cluster everywhere: ``seed`` is the builders' own (the default 1 is
    what every command's default ``--seed`` 0 draws; a command passes
    ``command_seed(args.seed)``).  ``None`` options take the builder's default; a given one
    that a spec cannot honour is an error, never ignored."""
    name, _, arg = spec.partition(":")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TopologyError(f"seed={seed!r}: expected an integer >= 0")
    for field, value in (("ps", ps), ("workers", workers)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise TopologyError(f"{spec}: {field}={value!r}: expected an integer >= 1")
    try:
        if name == "fig1" and not arg:
            given = [f for f, v in (("ps", ps), ("workers", workers), ("preset", preset))
                     if v is not None]
            if given:
                raise TopologyError(f"fig1: {', '.join(given)} given, but fig1's PSs, workers "
                                    f"and capacities are fixed by the paper")
            return fig1()
        if name == "fattree":
            return fattree(int(arg), ps=4 if ps is None else ps, workers=workers,
                           preset=preset or "homogeneous", seed=seed)
        if name == "leafspine":
            leaves, spines, hosts = (int(v) for v in arg.split(","))
            return leafspine(leaves, spines, hosts, ps=2 if ps is None else ps, workers=workers,
                             preset=preset or "homogeneous", seed=seed)
        if name == "irregular":
            switches, hosts = (int(v) for v in arg.split(","))
            return irregular(switches, hosts, ps=2 if ps is None else ps, workers=workers,
                             preset=preset or "homogeneous", seed=seed)
    except ValueError as exc:
        if isinstance(exc, TopologyError):
            raise
        raise TopologyError(f"topology spec '{spec}': bad numbers ({exc})") from exc
    if Path(spec).is_file():
        given = [f for f, v in (("ps", ps), ("workers", workers), ("preset", preset))
                 if v is not None]
        if given:
            raise TopologyError(f"{spec}: {', '.join(given)} given, but a topology file sets "
                                f"its own PSs, workers and capacities (edit the file instead)")
        return Topology.load(spec)
    raise TopologyError(
        f"topology spec '{spec}': expected fig1, fattree:K, leafspine:L,S,H, irregular:SW,H "
        f"or an existing file"
    )
