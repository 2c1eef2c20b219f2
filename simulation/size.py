"""How big a simulation will get, known from the topology spec before anything is built.

A fat-tree's hosts grow as k^3/4: fattree:200 has 2,000,000 of them, whose topology alone
takes minutes and gigabytes to build before SimGrid sees a link.  ``check_specs`` estimates
each spec's peak memory from its counts and refuses, naming the estimate and the override,
what this machine cannot hold; ``build_checked`` then builds with progress.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from control_plane.cli.args import progress
from control_plane.model.topologies import build_topology, command_seed
from control_plane.model.topology import Topology

# Peak RSS of one `inart bench simulate -k K --schemes S` process (ResNet-50, 100 Gbit/s) on
# the project's shared 2-core VM, less BASE_BYTES (the imports alone: 0.25 GB), per host, at
# the largest k measured: ring 0.637 GB at k=48 (27,648 hosts, 2 December 2026; 0.313 at
# k=32); r-inart 0.49 (its solve included), tree 2.33 and rsgcm 1.07 at k=32 (8,192 hosts,
# docs/simulation.md).  The figures grow with k (the tree's: 160 kB a host at k=16, 254 at
# 32; the ring's 8 at 32, 14 at 48), so past the measured sizes the estimate is a floor.
BASE_BYTES = 0.25e9
PER_HOST_BYTES = {"ring": 10e3, "inart": 30e3, "r-inart": 30e3, "atp": 30e3,
                  "lbmm": 30e3, "tree": 254e3, "rsgcm": 100e3}
# the topology itself: a built fattree:48 took 4.8 kB a host, fattree:200 more than 6 (its
# build passed 12 GB)
TOPOLOGY_BYTES_PER_HOST = 6e3
WARN_BYTES = 1e9  # above this, say the estimate before building


class SizeError(ValueError):
    """A run estimated to need more memory than the machine has."""


@dataclass(frozen=True)
class SizeEstimate:
    """Counts of one spec and the peak memory its heaviest scheme is expected to take."""

    spec: str
    hosts: int
    switches: int
    links: int  # physical (each full duplex)
    scheme: str  # the heaviest of the schemes asked for
    peak_bytes: float

    def describe(self) -> str:
        return (f"{self.spec}: {self.hosts:,} hosts, {self.switches:,} switches, "
                f"{self.links:,} links; an estimated {self.peak_bytes / 1e9:.3g} GB at the "
                f"peak ({self.scheme})")


def counts(spec: str) -> tuple[int, int, int] | None:
    """(hosts, switches, physical links) of a generated spec, without building it; None for
    fig1 and files (small, or already in memory as text) and specs the builder will refuse."""
    name, _, arg = spec.partition(":")
    try:
        if name == "fattree":
            k = int(arg)
            if k < 2 or k % 2:
                return None
            return k ** 3 // 4, 5 * k * k // 4, 3 * k ** 3 // 4
        if name == "leafspine":
            leaves, spines, hosts = (int(v) for v in arg.split(","))
            return leaves * hosts, leaves + spines, leaves * spines + leaves * hosts
        if name == "irregular":
            switches, hosts = (int(v) for v in arg.split(","))
            return hosts, switches, 2 * switches + hosts
    except ValueError:
        return None
    return None


def estimate(spec: str, schemes: list[str], hosts_switches_links: tuple[int, int, int]
             ) -> SizeEstimate:
    """The peak memory of simulating ``schemes`` one after another on one topology."""
    hosts, switches, links = hosts_switches_links
    heaviest = max(schemes, key=lambda s: PER_HOST_BYTES.get(s, 0.0))
    peak = BASE_BYTES + hosts * (TOPOLOGY_BYTES_PER_HOST + PER_HOST_BYTES.get(heaviest, 0.0))
    return SizeEstimate(spec, hosts, switches, links, heaviest, peak)


def available_bytes() -> float:
    """Memory this machine can give now (MemAvailable), else its physical memory."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def check_specs(specs: list[str], schemes: list[str], limit_bytes: float | None = None,
                force: bool = False) -> list[SizeEstimate]:
    """Estimates of the generated specs; raises SizeError for the first one past
    ``limit_bytes`` (default: the memory available now) unless ``force``."""
    limit = available_bytes() if limit_bytes is None else limit_bytes
    found = []
    for spec in specs:
        c = counts(spec)
        if c is None:
            continue
        est = estimate(spec, schemes, c)
        if est.peak_bytes > limit and not force:
            raise SizeError(f"{est.describe()}, more than the {limit / 1e9:.3g} GB this machine "
                            f"has available: give a smaller topology, or --force to run anyway")
        found.append(est)
    return found


def build_checked(specs: list[str], schemes: list[str], *, ps: int | None = None,
                  seed: int = 0, force: bool = False, limit_bytes: float | None = None,
                  quiet: bool = False) -> list[Topology]:
    """Check every spec's size first (nothing is built if one is refused), then build them,
    with a progress bar where a build is large; ``seed`` is the command's ``--seed``."""
    estimates = {e.spec: e for e in check_specs(specs, schemes, limit_bytes, force)}
    big = [e for e in estimates.values() if e.peak_bytes > WARN_BYTES]
    for e in big:
        print(f"{e.describe()}; building", file=sys.stderr, flush=True)
    topos = []
    with progress(specs, desc="build", unit="topology", disable=not big, quiet=quiet) as bar:
        for spec in bar:
            bar.set_postfix(topology=spec)
            topos.append(build_topology(spec, ps=ps, seed=command_seed(seed)))
    return topos
