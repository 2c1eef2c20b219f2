"""Loss on chosen links of an emulated network (`inart experiment head-to-head --loss PCT
--loss-links A-B,...`): parsing and checking the links, without starting Mininet
(tests/emulation/test_emulation_network.py starts one with loss on one link)."""

import argparse

import pytest

from control_plane.model.topologies import fig1
from emulation.head_to_head import configure, link_list
from emulation.network import NetworkError, lossy_links


def test_every_link_by_default_and_the_named_ones_in_either_direction():
    topo = fig1()
    assert lossy_links(topo, None) == {frozenset(ab) for ab in topo.links}
    assert lossy_links(topo, [("s1", "v2"), ("w1", "v1")]) == {frozenset(("v2", "s1")),
                                                              frozenset(("v1", "w1"))}


def test_a_pair_that_is_no_link_is_refused_by_name():
    with pytest.raises(NetworkError, match="loss links s1-w1: not links of fig1"):
        lossy_links(fig1(), [("w1", "s1")])


def test_head_to_head_options():
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(["--loss", "1", "--loss-links", "v2-s1,w1-v1"])
    assert args.loss == 1.0 and args.loss_links == [("v2", "s1"), ("w1", "v1")]
    assert parser.parse_args([]).loss_links is None
    for bad in (["--loss", "100"], ["--loss", "x"], ["--loss-links", "v2"],
                ["--loss-links", ","]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="'a-b-c': expected NODE-NODE"):
        link_list("a-b-c")
