"""Values per packet: bounded by a 1500-byte frame, or by one UDP datagram where every
address of the job is on loopback (no switch reads those packets)."""

from __future__ import annotations

import argparse

import pytest

from host_stack.ina.addresses import AddressMap, loopback
from host_stack.ina.jobplan import load_plan
from host_stack.train.jobargs import MAX_N_FRAME, MAX_N_LOOPBACK, add_job_args, load_job
from host_stack.train.launcher import resolve_plan


def test_packets_fill_a_frame_through_a_network_and_a_datagram_on_loopback(tmp_path):
    path = resolve_plan("star:3:1", tmp_path)
    plan = load_plan(path)
    nodes = plan.ps_ids + plan.worker_ids
    lo = loopback(nodes)
    net = AddressMap({x: (f"10.0.0.{i + 1}", 47000) for i, x in enumerate(nodes)})
    parser = argparse.ArgumentParser()
    add_job_args(parser)
    args = parser.parse_args(["--plan", str(path), "--model", "synthetic", "--values", "1000"])
    assert load_job(args, net).n == load_job(args, lo).n == 32  # the P4 program's N
    for n, addresses in ((MAX_N_LOOPBACK, lo), (MAX_N_FRAME, net)):
        args.n = n
        assert load_job(args, addresses).n == n
    args.n = MAX_N_FRAME + 1
    with pytest.raises(ValueError, match=rf"--n {MAX_N_FRAME + 1}: expected 1..{MAX_N_FRAME} "
                                         r"\(.*1500-byte frame\)"):
        load_job(args, net)
    args.n = MAX_N_LOOPBACK + 1
    with pytest.raises(ValueError, match=rf"expected 1..{MAX_N_LOOPBACK} \(.*loopback"):
        load_job(args, lo)
