"""The head-to-head's printed summary: rows that fit a terminal, spreads only over seeds."""

from emulation.head_to_head import COLUMNS, summary


def _row(scheme: str, seed: int, iter_s: float) -> dict:
    row = {k: 0 for k in COLUMNS}
    row.update(scheme=scheme, seed=seed, iter_s=iter_s, compute_s=0.123456, comm_s=1.234567,
               rate_mbps=0.4987654, images_per_s=123.456, train_s=45.6789, final_loss=2.251123,
               accuracy=0.4365, time_to_target_s=None, worker_bytes=15_700_000,
               expected_bytes=15_600_000, bytes_ratio=1.0064, tcp_retx=1794, ina_retx=46_463,
               ps_ingress_bytes=31_400_000, link_bytes=123_456_789)
    return row


def test_one_seed_prints_values_not_a_spread_of_one() -> None:
    rows = [_row(s, 0, 2.48) for s in ("inart", "r-inart", "atp", "lbmm", "ring", "tree",
                                       "rsgcm", "selective")]
    text = summary(rows, seeds=1)
    assert "[" not in text and "median" not in text
    assert max(len(line) for line in text.splitlines()) <= 120


def test_several_seeds_add_median_and_range() -> None:
    rows = [_row("inart", 0, 2.0), _row("inart", 1, 3.0), _row("ring", 0, 1.5),
            _row("ring", 1, 1.5)]
    text = summary(rows, seeds=2)
    assert "over 2 seeds: median [min-max]" in text
    inart = next(line for line in text.splitlines()[-2:] if line.startswith("inart"))
    assert "2.5 [2-3]" in inart
    ring = next(line for line in text.splitlines()[-2:] if line.startswith("ring"))
    assert "1.5 [" not in ring and " 1.5 " in f"{ring} "
