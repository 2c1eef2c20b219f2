import numpy as np

from host_stack.ina.aggregator import ChunkAggregator, Verdict
from host_stack.ina.ps_apply import OptimizerApply, SumApply
from host_stack.ina.quantize import Quantizer


def make(workers=3, chunks=4, n=4):
    return ChunkAggregator(chunks, n, workers, SumApply())


def vals(x, n=4):
    return np.full(n, x, dtype=np.int32)


def test_completes_once_when_all_bits_in_and_drops_duplicates():
    agg = make()
    assert agg.offer(0, 1, 0b001, 1, vals(1)) is Verdict.ACCEPTED
    assert agg.offer(0, 1, 0b001, 1, vals(1)) is Verdict.DROPPED  # duplicate
    assert agg.offer(0, 1, 0b010, 1, vals(2)) is Verdict.ACCEPTED
    assert agg.offer(0, 1, 0b100, 1, vals(4)) is Verdict.COMPLETED
    assert np.frombuffer(agg.result(1), ">i4").tolist() == [7] * 4
    assert agg.offer(0, 1, 0b010, 1, vals(2)) is Verdict.ANSWER_LATE  # late RETX
    assert agg.counters["drop_duplicate"] == 1 and agg.counters["completed"] == 1


def test_switch_aggregate_is_accepted_only_if_disjoint():
    agg = make(workers=4)
    assert agg.offer(0, 0, 0b0011, 2, vals(10)) is Verdict.ACCEPTED  # from a switch
    assert agg.offer(0, 0, 0b0110, 2, vals(99)) is Verdict.DROPPED  # overlaps rank 1
    assert agg.offer(0, 0, 0b0100, 1, vals(5)) is Verdict.ACCEPTED  # direct RETX
    assert agg.offer(3, 0, 0b1000, 1, vals(1)) is Verdict.DROPPED  # round 3 before 0..2
    assert agg.counters["drop_future_round"] == 1


def test_round_progression_stale_future_and_bad_fields():
    agg = make(workers=1)
    assert agg.offer(0, 0, 1, 1, vals(1)) is Verdict.COMPLETED
    assert agg.offer(1, 0, 1, 1, vals(2)) is Verdict.COMPLETED
    assert agg.offer(0, 0, 1, 1, vals(1)) is Verdict.DROPPED
    assert agg.offer(3, 0, 1, 1, vals(1)) is Verdict.DROPPED
    assert agg.offer(2, 9, 1, 1, vals(1)) is Verdict.DROPPED
    assert agg.offer(2, 0, 0b10, 1, vals(1)) is Verdict.DROPPED  # rank beyond workers
    assert agg.offer(2, 0, 0b1, 2, vals(1)) is Verdict.DROPPED  # count != popcount
    c = agg.counters
    assert (c["drop_stale_round"], c["drop_future_round"], c["drop_bad_chunk"],
            c["drop_bad_bitmap"], c["drop_bad_count"]) == (1, 1, 1, 1, 1)


def test_an_allreduce_shard_lets_a_chunk_sit_out_rounds():
    """skip_rounds (PS --mode allreduce): a call that does not reach a chunk leaves its
    round out; the next one that does starts the chunk's sum, still exactly once."""
    agg = ChunkAggregator(2, 4, 2, SumApply(), skip_rounds=True)
    assert agg.offer(0, 1, 0b01, 1, vals(1)) is Verdict.ACCEPTED
    assert agg.offer(0, 1, 0b10, 1, vals(2)) is Verdict.COMPLETED
    assert agg.offer(4, 1, 0b01, 1, vals(5)) is Verdict.ACCEPTED  # rounds 1-3 not here
    assert agg.offer(0, 1, 0b10, 1, vals(2)) is Verdict.ANSWER_LATE  # round 0's RESULT
    assert agg.offer(4, 1, 0b01, 1, vals(5)) is Verdict.DROPPED  # a duplicate stays one
    assert agg.offer(4, 1, 0b10, 1, vals(6)) is Verdict.COMPLETED
    assert np.frombuffer(agg.result(1), ">i4").tolist() == [11] * 4
    assert agg.offer(2, 1, 0b01, 1, vals(9)) is Verdict.DROPPED  # older than completed
    assert agg.offer(7, 0, 0b11, 2, vals(3)) is Verdict.COMPLETED  # chunk 0's first round
    assert agg.counters["drop_future_round"] == 0


def test_optimizer_apply_steps_momentum_sgd_on_the_average():
    q = Quantizer(2, 1.0)
    params = np.ones(8, dtype=np.float32)
    apply = OptimizerApply(params.copy(), 4, q, lr=0.5, momentum=0.9)
    agg = ChunkAggregator(2, 4, 2, apply)
    g0, g1 = np.full(4, 0.25), np.full(4, 0.75)
    agg.offer(0, 1, 1, 1, q.quantize(g0)[0])
    assert agg.offer(0, 1, 2, 1, q.quantize(g1)[0]) is Verdict.COMPLETED
    got = np.frombuffer(agg.result(1), ">f4")
    np.testing.assert_allclose(got, 1 - 0.5 * 0.5)  # average grad 0.5, first momentum step
    np.testing.assert_array_equal(apply.state()["params"][:4], 1.0)  # chunk 0 untouched
