"""The engine's platform changes for speed must not change what it simulates.

SECONDS holds every stage's bandwidth seconds as the engine gave them while its sinks sat
behind FATPIPE links (ResNet-50, 100 Gbit/s, ECMP, plans solved with seed 0); the engine
must reproduce them to floating-point noise.  The sink itself must carry no link: a link
there is a constraint of every flow, which SimGrid's solver walks whenever it fixes a rate,
and it joins flows that share no other link into one system that every event re-solves.
"""

from __future__ import annotations

import multiprocessing

import pytest

from control_plane.model.topologies import build_topology
from simulation.collectives import tree_stages
from simulation.engine import Network, Stage, Transfer, _simulate, run_stages
from simulation.profiles import BUILTIN
from simulation.run import network, simulate, unit_bps

SECONDS = {
    "fig1 tree": [0.008737456800698996, 0.0058249712, 0.0058249712, 0.008737456800698996],
    "fattree:4 tree": [0.00436875552, 0.00509688144, 0.004368755519300999, 0.00582500736,
                       0.00509688144, 0.00436875552],
    "fattree:6 tree": [0.0059419216, 0.004368614120509765, 0.0017476240000000004,
                       0.0019223863993848363, 0.004194297598993368, 0.0059419216],
    "fattree:8 tree": [0.00655388112052431, 0.0033826483194587752, 0.0019027396801522196,
                       0.001550380479503879, 0.0033826483194587744, 0.00655388112052431],
    "leafspine:4,2,5 tree": [0.00776678144, 0.004368814560349505, 0.0048542384,
                             0.00776678144],
    "fattree:6 ring": [0.0171267152],
    "fattree:4 inart": [0.02311536384244908],
    "fattree:4 atp": [0.0371856096118994],
    "fig1 lbmm": [0.055778274724462264],
    "fig1 r-inart": [0.0309879304],
}


@pytest.mark.parametrize("case", list(SECONDS))
def test_stage_seconds_are_unchanged(case) -> None:
    spec, scheme = case.split()
    topo = build_topology(spec)
    size = BUILTIN["resnet50"].model_bytes
    if scheme == "tree":  # simulate() runs the tree rank by rank; the engine's stages here
        unit = unit_bps(topo, 100.0, None)
        secs = run_stages(network(topo, unit), tree_stages(topo, topo.workers, size))
    else:
        res = simulate(topo, scheme, model_bytes=size, link_gbps=100.0)
        secs = [s["bandwidth_s"] for s in res.stages]
    assert secs == pytest.approx(SECONDS[case], rel=1e-9)


def _links_of_platform(pipe) -> None:
    import simgrid

    net = Network({("a", "b"): 1e9, ("c", "b"): 1e9})
    stage = Stage("s", [Transfer(("a", "b"), 1e9), Transfer(("c", "b"), 1e9, bound=5e8)])
    _simulate(net, [stage])
    pipe.send(sorted(link.name for link in simgrid.Engine.instance.all_links
                     if not link.name.startswith("__")))  # SimGrid's own loopback
    pipe.close()


def test_the_sink_has_no_link() -> None:
    ctx = multiprocessing.get_context("fork")  # SimGrid's engine lives once per process
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_links_of_platform, args=(send,))
    proc.start()
    names = recv.recv()
    proc.join()
    assert names == ["a->b", "bound1", "c->b"]  # the topology's and the bound's, no sink
