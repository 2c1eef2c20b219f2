"""A job under `inart serve` on a Mininet network of embedded switches: a link the plan uses
fails mid-training, the service re-plans and installs make-before-break, the hosts follow at
a round boundary, the link comes back and so does the first plan; every round's sums exact.

The topology is a small leaf-spine, not fig1: fig1 is a tree, so every one of its links is a
bridge and a failure there cuts a worker or a PS off (no re-routing can keep the job whole).
"""

from __future__ import annotations

import json
import re
from contextlib import ExitStack
from pathlib import Path

import pytest

from control_plane.deploy.addressing import assign
from control_plane.model.plan import Plan
from control_plane.model.topologies import build_topology
from control_plane.service.client import Client
from control_plane.service.proto import inart_controller_pb2 as pb
from emulation.network.mininet_net import Network
from host_stack.train.hostrun import JobResult, TrafficConfig, run_hosts, service_job
from tests.foreground import inart_foreground

pytestmark = [pytest.mark.root, pytest.mark.usefixtures("needs_mininet_and_program")]
SCALE = 0.25  # Mbit/s per topology unit, as in test_emulation_e2e.py
DOWN_AFTER, UP_AFTER, ROUNDS = 2, 7, 12



def fabric_link(plan: Plan) -> tuple[str, str]:
    """The first leaf-spine link (in name order) that some flow of ``plan`` crosses."""
    switches = set(plan.topology.switches)
    return min((a, b) for flow in plan.flows
               for a, b in zip(flow.path, flow.path[1:], strict=False)
               if a in switches and b in switches)


class ServedNetwork:
    """A Mininet network of embedded switches registered with `inart serve` (Unix socket, so
    the hosts' namespaces reach it) and ready for plan versions."""

    def __init__(self, stack: ExitStack, tmp_path: Path) -> None:
        # seed 4: the link the tests fail costs the plan a third of its rate (8.23 -> 5.41)
        self.topo = build_topology("leafspine:2,2,3", ps=2, preset="heterogeneous", seed=4)
        addr = assign(self.topo)
        self.sock, self.tmp = f"unix:{tmp_path / 'serve.sock'}", tmp_path
        self.net = stack.enter_context(Network(self.topo, addr, tmp_path / "net", "embedded",
                                               SCALE, quiet=True))
        line = stack.enter_context(inart_foreground(
            "serve", "--listen", self.sock, "--state", str(tmp_path / "state"),
            "--reconcile-interval", "3600"))
        assert re.search(r"listening on unix:", line), line
        self.client = stack.enter_context(Client(self.sock))
        self.net.prepare_versions()
        self.client.register_topology(self.topo, {sw: (addr.grpc_address(sw),
                                                       addr.device_id[sw])
                                                  for sw in self.topo.switches})

    def train(self, cfg: TrafficConfig, fail: bool) -> tuple[JobResult, pb.Job, list]:
        """One job; with ``fail``, a link of its plan goes down after round DOWN_AFTER (the
        failure, then its report) and comes back after UP_AFTER."""
        job = self.client.submit(model_size=cfg.values if cfg.mode == "synthetic" else 1.0)
        first = self.client.plan(job.id)
        down = fabric_link(Plan.from_dict(json.loads(first.plan_json)))
        replies: list[pb.ReportEventResponse] = []

        def on_round(r: int) -> None:
            if fail and r in (DOWN_AFTER, UP_AFTER):
                status = "down" if r == DOWN_AFTER else "up"
                self.net.net.configLinkStatus(*down, status)
                replies.append(self.client.event(f"link-{status}", link=down))

        result = run_hosts(self.net, service_job(self.sock, job.id, list(first.workers),
                                                 list(first.pss), dict(first.ranks)),
                           cfg, self.tmp / f"hosts-{job.id}", quiet=True, on_round=on_round)
        return result, job, replies


def versions_per_round(result: JobResult) -> list[int]:
    """The plan version of every round, checked to be the same on every worker."""
    per_round: dict[int, set[int]] = {}
    for records in result.rounds.values():
        for r in records:
            per_round.setdefault(r["round"], set()).add(r["version"])
    assert all(len(v) == 1 for v in per_round.values()), per_round
    return [per_round[r].pop() for r in sorted(per_round)]


def test_exact_sums_through_a_link_failure_and_back(tmp_path: Path) -> None:
    with ExitStack() as stack:
        served = ServedNetwork(stack, tmp_path)
        cfg = TrafficConfig(rounds=ROUNDS, values=32 * 400, unit_bps=SCALE * 1e6,
                            deadline_s=240)
        result, job, replies = served.train(cfg, fail=True)
        versions = {v: served.client.plan(job.id, v) for v in (1, 2, 3)}
    assert result.exact, result.mismatches  # every round's sums, on every worker, complete
    assert [r.replans[0].outcome for r in replies] == [pb.REPLAN_OUTCOME_NEW_VERSION] * 2
    assert [versions[v].bank for v in (1, 2, 3)] == ["A", "B", "A"]
    plans = {v: Plan.from_dict(json.loads(m.plan_json)) for v, m in versions.items()}
    assert plans[2].rate < plans[1].rate == plans[3].rate
    assert plans[3].flows == plans[1].flows  # the link is back: so is the better plan
    used = versions_per_round(result)
    assert used == sorted(used) and set(used) == {1, 2, 3}, used
    assert used.index(2) == versions[2].switch_round and used.index(3) == versions[3].switch_round
    for stats in result.ps_stats.values():
        assert stats["versions_served"] == 3, stats


def test_training_through_a_link_failure_ends_where_training_without_it_does(
        tmp_path: Path) -> None:
    """A real model (PSs apply momentum SGD): the same parameters, bit for bit, and the same
    accuracy as the same job on the same network without the failure."""
    cfg = TrafficConfig(mode="train", model="mlp", rounds=ROUNDS, unit_bps=SCALE * 1e6,
                        deadline_s=240)
    with ExitStack() as stack:
        served = ServedNetwork(stack, tmp_path)
        failed, job, replies = served.train(cfg, fail=True)
        served.client.cancel(job.id)  # its hosts are done: the next job takes their place
        clean, _, _ = served.train(cfg, fail=False)
    assert len(replies) == 2 and set(versions_per_round(failed)) == {1, 2, 3}
    assert set(versions_per_round(clean)) == {1}
    digests = {d["params_sha256"] for d in (*failed.done.values(), *clean.done.values())}
    assert len(digests) == 1, digests
    assert {d["accuracy"] for d in failed.done.values()} == \
        {d["accuracy"] for d in clean.done.values()}
