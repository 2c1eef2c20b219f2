"""Exactly-once aggregation across OS processes, checked round by round against numpy.

PS processes run in sum mode (RESULT = int32 sums) and workers send seeded synthetic
gradients, so the test can recompute every round's expected sum.  Impairments:
- on loopback with the injector (--impair), always;
- across two network namespaces joined by a veth pair, with tc netem loss/duplicate/reorder on
  both ends (root; skipped with the reason when netem is not in the kernel), and with the
  injector on the same veth path (root).
"""

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from host_stack.ina.addresses import AddressMap, loopback
from host_stack.ina.jobplan import star_plan
from host_stack.netns import Netns, can_create_veths, link, namespaces
from host_stack.train.worker import expected_digests

ROOT = Path(__file__).resolve().parent.parent
N, VALUES, ROUNDS, WORKERS = 32, 32 * 250, 8, 4  # 250 chunks x 8 rounds = 2,000 chunks
IMPAIR = "loss=0.05,dup=0.05,reorder=0.05"


def run_sum_job(tmp_path, addresses: AddressMap, ps_prefix=(), worker_prefix=(), extra=()):
    star_plan(WORKERS, [0.5, 0.5]).save(tmp_path / "plan.json")
    (tmp_path / "addr.json").write_text(addresses.to_json())
    job = ["--plan", str(tmp_path / "plan.json"), "--addresses", str(tmp_path / "addr.json"),
           "--model", "synthetic", "--values", str(VALUES), *extra]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = []
    try:
        for ps in ("s1", "s2"):
            p = subprocess.Popen([*ps_prefix, sys.executable, "-m", "host_stack.ina.ps", *job,
                                  "--ps", ps, "--mode", "sum", "--idle-exit", "120",
                                  "--stats", str(tmp_path / f"{ps}.json")],
                                 env=env, stdout=subprocess.PIPE, text=True)
            procs.append(p)
            assert select.select([p.stdout], [], [], 60)[0], "PS did not start in 60 s"
            assert json.loads(p.stdout.readline())["event"] == "ready"
        workers = [subprocess.Popen([*worker_prefix, sys.executable, "-m",
                                     "host_stack.train.worker",
                                     *job, "--worker", f"w{i + 1}", "--rounds", str(ROUNDS)],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
                   for i in range(WORKERS)]
        procs += workers
        outputs = [w.communicate(timeout=240) for w in workers]
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
            p.wait(timeout=10)
    records = []
    for (out, err), w in zip(outputs, workers, strict=True):
        assert w.returncode == 0, err
        records.append([json.loads(line) for line in out.splitlines()])
    ps_stats = [json.loads((tmp_path / f"{ps}.json").read_text()) for ps in ("s1", "s2")]
    return records, ps_stats


def check_exactly_once(records, ps_stats):
    want = expected_digests(WORKERS, ROUNDS, VALUES)
    for recs in records:
        got = [r["result_sha256"] for r in recs if r["event"] == "round"]
        assert got == want  # every round's sums equal numpy's, on every worker
    assert sum(s["agg_completed"] for s in ps_stats) == ROUNDS * VALUES // N
    assert sum(s["agg_contributions"] for s in ps_stats) == ROUNDS * VALUES // N * WORKERS
    retx = sum(r[-1]["counters"].get("retx_sent", 0) for r in records)
    dups = sum(s.get("agg_drop_duplicate", 0) for s in ps_stats)
    print(f"{ROUNDS * VALUES // N} chunks exact on {WORKERS} workers; worker RETX {retx}, "
          f"duplicates refused at the PSs {dups}")
    return retx, dups


# the cases of `inart bench train --impair`
LOOPBACK_IMPAIRMENTS = ["loss=0.001", "loss=0.01", "reorder=0.05", IMPAIR]


@pytest.mark.parametrize("impair", LOOPBACK_IMPAIRMENTS)
def test_processes_exactly_once_on_loopback_with_injected_impairment(tmp_path, impair):
    addresses = loopback(["s1", "s2"] + [f"w{i + 1}" for i in range(WORKERS)])
    records, ps_stats = run_sum_job(tmp_path, addresses, extra=["--impair", impair])
    retx, dups = check_exactly_once(records, ps_stats)
    injected = {k: sum(s.get(f"impair_{k}", 0) for s in ps_stats)
                for k in ("dropped", "duplicated", "reordered")}
    assert (injected["dropped"] > 0) == ("loss" in impair)
    assert (injected["reordered"] > 0) == ("reorder" in impair)
    if impair == IMPAIR:
        assert retx > 0 and dups > 0


class VethPair:
    """Two namespaces (PS side, worker side) joined by a veth pair, from host_stack.netns."""

    ip = ("10.213.0.1", "10.213.0.2")

    def __init__(self, ns: list[Netns]) -> None:
        tag = f"{os.getpid() % 100000}"
        self.ns = ns
        self.dev = (f"ihs{tag}p", f"ihs{tag}w")
        link(ns[0], self.dev[0], ns[1], self.dev[1], f"{self.ip[0]}/24", f"{self.ip[1]}/24")

    def netem(self, spec: str) -> None:
        for ns, dev in zip(self.ns, self.dev, strict=True):
            subprocess.run([*ns.exec_prefix(), "tc", "qdisc", "add", "dev", dev, "root",
                            "netem", *spec.split()], check=True, capture_output=True, text=True,
                           timeout=30)

    def prefix(self, i):
        return tuple(self.ns[i].exec_prefix())


@pytest.fixture
def veth():
    reason = can_create_veths()
    if reason:
        pytest.skip(reason)
    tag = f"{os.getpid() % 100000}"
    with namespaces([f"inart-hs{tag}-ps", f"inart-hs{tag}-wk"]) as ns:
        yield VethPair(ns)


def veth_addresses(pair):
    entries = {"s1": (pair.ip[0], 47000), "s2": (pair.ip[0], 47010)}
    entries.update({f"w{i + 1}": (pair.ip[1], 47001 + i) for i in range(WORKERS)})
    return AddressMap(entries)


@pytest.mark.root
def test_exactly_once_across_namespaces_with_tc_netem(tmp_path, veth):
    try:
        veth.netem("loss 5% duplicate 5% delay 1ms reorder 75% 50%")
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"tc netem unavailable here: {exc.stderr.strip()}")
    records, ps_stats = run_sum_job(tmp_path, veth_addresses(veth), veth.prefix(0),
                                    veth.prefix(1))
    retx, dups = check_exactly_once(records, ps_stats)
    assert retx > 0 and dups > 0


@pytest.mark.root
def test_exactly_once_across_namespaces_with_injected_impairment(tmp_path, veth):
    records, ps_stats = run_sum_job(tmp_path, veth_addresses(veth), veth.prefix(0),
                                    veth.prefix(1), extra=["--impair", IMPAIR])
    retx, dups = check_exactly_once(records, ps_stats)
    assert retx > 0 and dups > 0
