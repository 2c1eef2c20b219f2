"""The head-to-head's printed summary: rows that fit a terminal, spreads only over seeds, a
fidelity verdict per run and a ranking only when no run was bounded by the machine."""

from emulation.experiments.head_to_head import COLUMNS, summary
from emulation.measure.fidelity import judge


def _row(scheme: str, seed: int, iter_s: float) -> dict:
    row = {k: 0 for k in COLUMNS}
    row.update(scheme=scheme, seed=seed, iter_s=iter_s, compute_s=0.123456, comm_s=1.234567,
               rate_mbps=0.4987654, images_per_s=123.456, train_s=45.6789, final_loss=2.251123,
               accuracy=0.4365, time_to_target_s=None, worker_bytes=15_700_000,
               expected_bytes=15_600_000, bytes_ratio=1.0064, tcp_retx=1794, ina_retx=46_463,
               ps_ingress_bytes=31_400_000, link_bytes=123_456_789)
    row.update(judge(scheme, 0.95 if scheme != "ring" else None, 0, 0.5, 0.0, 0.6).fields(),
               sent_over_plan=0.95 if scheme != "ring" else None)
    return row


def test_one_seed_prints_values_not_a_spread_of_one() -> None:
    rows = [_row(s, 0, 2.48) for s in ("inart", "r-inart", "atp", "lbmm", "ring", "tree",
                                       "rsgcm", "selective")]
    text = summary(rows, seeds=1)
    assert "[" not in text and "median" not in text
    assert max(len(line) for line in text.splitlines()[:len(rows) + 1]) <= 120


def test_several_seeds_add_median_and_range() -> None:
    rows = [_row("inart", 0, 2.0), _row("inart", 1, 3.0), _row("ring", 0, 1.5),
            _row("ring", 1, 1.5)]
    text = summary(rows, seeds=2)
    assert "over 2 seeds: median [min-max]" in text
    lines = text.splitlines()
    spread = lines[lines.index("over 2 seeds: median [min-max]") + 1:]
    inart = next(line for line in spread if line.startswith("inart"))
    assert "2.5 [2-3]" in inart
    ring = next(line for line in spread if line.startswith("ring"))
    assert "1.5 [" not in ring and " 1.5 " in f"{ring} "


def test_verdicts_then_a_ranking_only_when_no_run_is_marked() -> None:
    rows = [_row("inart", 0, 3.0), _row("ring", 0, 1.5), _row("atp", 0, 2.0)]
    text = summary(rows, seeds=1)
    assert "fidelity inart: sent 0.95 of plan, 46463 retx" in text
    assert "fidelity ring: not paced, 1794 retx" in text
    assert "ranking by time per iteration: ring 1.5 s < atp 2 s < inart 3 s" in text
    rows[0].update(judge("inart", 0.37, 46_463, 1.0, 0.9, 5.0).fields(), sent_over_plan=0.37)
    text = summary(rows, seeds=1)
    assert "ranking by" not in text
    assert "no ranking: the result is bounded by the machine, not the schemes (inart: sent " \
           "0.37 of its plan (< 0.9), machine saturated in 90% of its samples)" in text


def test_the_exchange_runs_from_the_last_workers_start_to_the_last_end() -> None:
    """A worker that computed longer enters the sync late: the others' sync holds the wait,
    the exchange does not."""
    from emulation.experiments.head_to_head import per_round
    from host_stack.train.hostrun import JobResult

    rec = {"compute_s": 0.0, "loss": 1.0}
    job = JobResult(rounds={"w1": [rec | {"sync_at": 100.0, "sync_s": 1.5}],
                            "w2": [rec | {"sync_at": 100.9, "sync_s": 0.6}],
                            "w3": [rec | {"sync_at": 100.5, "sync_s": 1.2}]},
                    done={}, ps_stats={}, chunks={}, wall_s=2.0)
    (row,) = per_round(job)
    assert row["comm_s"] == 1.5  # the slowest worker's (w1: waited 0.9 s for w2)
    assert abs(row["exchange_s"] - 0.8) < 1e-9  # 100.9 -> 101.7 (w3 ends last)


def test_rounds_without_start_times_have_no_exchange() -> None:
    from emulation.experiments.head_to_head import per_round
    from host_stack.train.hostrun import JobResult

    job = JobResult(rounds={"w1": [{"compute_s": 0.0, "loss": 1.0, "sync_s": 1.0}]},
                    done={}, ps_stats={}, chunks={}, wall_s=1.0)
    assert "exchange_s" not in per_round(job)[0]


def test_the_cpu_isolation_the_runs_had_is_printed_once() -> None:
    rows = [_row("inart", 0, 3.0), _row("ring", 0, 1.5)]
    assert "cpu isolation" not in summary(rows, seeds=1)
    note = "switches weight 800 : hosts 100 (cgroup v1 cpu.shares, /sys/fs/cgroup/cpu/inart-1)"
    for r in rows:
        r["cpu_isolation"] = note
    assert summary(rows, seeds=1).count(f"cpu isolation: {note}") == 1
