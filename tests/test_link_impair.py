"""Loss, duplication and reordering on chosen links of an emulated network: the options, the
links, the nftables rules and their counters, without starting Mininet
(tests/emulation/test_link_impair_kernel.py runs the rules and the hold line on real
interfaces, tests/emulation/test_emulation_network.py on a Mininet network)."""

import argparse
import json

import pytest

from control_plane.model.topologies import fig1
from emulation.experiments.head_to_head import configure
from emulation.network.hold_line import pair
from emulation.network.link_impair import (
    MARK,
    ImpairError,
    LinkImpairment,
    egress_rules,
    frames_since,
    from_args,
    hold_names,
    link_list,
    rule_counts,
)


def test_every_link_by_default_and_the_named_ones_in_either_direction():
    topo = fig1()
    assert LinkImpairment(loss=1).chosen(topo) == {frozenset(ab) for ab in topo.links}
    chosen = LinkImpairment(loss=1, links=(("s1", "v2"), ("w1", "v1"))).chosen(topo)
    assert chosen == {frozenset(("v2", "s1")), frozenset(("v1", "w1"))}


def test_a_pair_that_is_no_link_is_refused_by_name():
    with pytest.raises(ImpairError, match="impaired links s1-w1: not links of fig1"):
        LinkImpairment(loss=1, links=(("w1", "s1"),)).chosen(fig1())


@pytest.mark.parametrize("kwargs, message", [
    ({"loss": 100}, "loss 100: expected a percentage 0 <= PCT < 100"),
    ({"dup": -1}, "dup -1: expected a percentage"),
    ({"reorder": 120}, "reorder 120: expected a percentage"),
    ({"reorder": 5, "delay_ms": 0}, "reorder delay 0 ms: expected 0 < MS <= 1000"),
])
def test_values_out_of_range_name_the_field(kwargs, message):
    with pytest.raises(ImpairError, match=message):
        LinkImpairment(**kwargs)


def test_head_to_head_options():
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(["--loss", "1", "--dup", "0.5", "--reorder", "5",
                              "--reorder-delay", "3", "--impair-links", "v2-s1,w1-v1"])
    imp = from_args(args)
    assert imp == LinkImpairment(loss=1.0, dup=0.5, reorder=5.0, delay_ms=3.0,
                                 links=(("v2", "s1"), ("w1", "v1")))
    assert imp.describe() == "loss 1%, dup 0.5%, reorder 5% (3 ms)"
    assert from_args(parser.parse_args([])) == LinkImpairment()
    assert not LinkImpairment().active and LinkImpairment().describe() == "none"
    for bad in (["--loss", "100"], ["--loss", "x"], ["--dup", "-1"], ["--reorder", "100"],
                ["--reorder-delay", "0"], ["--impair-links", "v2"], ["--impair-links", ","]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="'a-b-c': expected NODE-NODE"):
        link_list("a-b-c")


def test_emulate_takes_the_same_options():
    from emulation.cli.emulate import add_emulation_args

    parser = argparse.ArgumentParser()
    add_emulation_args(parser)
    args = parser.parse_args(["--reorder", "5", "--impair-links", "w1-v1"])
    assert from_args(args) == LinkImpairment(reorder=5.0, links=(("w1", "v1"),))


def test_rules_draw_loss_then_hold_then_duplicate_and_pass_marked_frames_once():
    text = egress_rules("inart_v1_eth1", "v1-eth1",
                        LinkImpairment(loss=0.1, dup=5, reorder=5))
    rules = [line for line in text.splitlines() if line.startswith("add rule")]
    assert 'type filter hook egress device "v1-eth1" priority 0;' in text
    assert rules[0].endswith(f"meta mark {MARK:#x} meta mark set 0 accept")
    assert rules[1].endswith("numgen random mod 100000 lt 100 counter drop")
    assert rules[2].endswith('numgen random mod 100000 lt 5000 counter fwd to "v1-eth1h"')
    assert rules[3].endswith(f'lt 5000 counter meta mark set {MARK:#x} dup to "v1-eth1" '
                             f"meta mark set 0")
    # loss alone needs neither the mark nor a hold veth
    only_loss = egress_rules("t", "w1-eth0", LinkImpairment(loss=1))
    assert "mark" not in only_loss and "fwd" not in only_loss
    assert "lt 1000 counter drop" in only_loss
    # 99.9999% rounds within numgen's range
    assert "lt 99999 counter drop" in egress_rules("t", "x", LinkImpairment(loss=99.9999))


def test_hold_veth_names_fit_the_kernel():
    assert hold_names("w1-eth0") == ("w1-eth0h", "w1-eth0p")
    with pytest.raises(ImpairError, match="longer than the kernel's 15 characters"):
        hold_names("agg12-eth100xxx")


def test_counters_read_from_nft_json():
    def rule(*exprs):
        return {"rule": {"family": "netdev", "table": "t", "chain": "eg", "expr": list(exprs)}}

    numgen = {"match": {"op": "<", "left": {"numgen": {"mode": "random", "mod": 100000}},
                        "right": 1000}}
    listing = {"nftables": [
        {"metainfo": {"version": "1.0.6"}}, {"table": {"family": "netdev", "name": "t"}},
        rule({"match": {"op": "==", "left": {"meta": {"key": "mark"}}, "right": MARK}},
             {"mangle": {"key": {"meta": {"key": "mark"}}, "value": 0}}, {"accept": None}),
        rule(numgen, {"counter": {"packets": 7, "bytes": 700}}, {"drop": None}),
        rule(numgen, {"counter": {"packets": 40, "bytes": 4000}}, {"fwd": {"dev": "xh"}}),
        rule(numgen, {"counter": {"packets": 3, "bytes": 300}},
             {"mangle": {"key": {"meta": {"key": "mark"}}, "value": MARK}},
             {"dup": {"dev": "x"}}, {"mangle": {"key": {"meta": {"key": "mark"}}, "value": 0}}),
    ]}
    assert rule_counts(json.dumps(listing)) == {"dropped": 7, "held": 40, "duplicated": 3}
    with pytest.raises(ValueError):
        rule_counts("Error: No such file or directory")


def test_a_runs_frames_are_the_counters_growth():
    before = {"dropped": 5, "held": 40, "duplicated": 0}
    after = {"dropped": 7, "held": 90, "duplicated": 3}
    assert frames_since(before, after) == {"frames_dropped": 2, "frames_held": 50,
                                           "frames_duplicated": 3}


def test_hold_line_pairs():
    assert pair("w1-eth0p=w1-eth0") == ("w1-eth0p", "w1-eth0")
    for bad in ("w1-eth0p", "=w1-eth0", "w1-eth0p="):
        with pytest.raises(argparse.ArgumentTypeError, match="expected HOLD_PEER=INTERFACE"):
            pair(bad)
