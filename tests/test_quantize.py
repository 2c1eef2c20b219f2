import numpy as np
import pytest

from host_stack.ina.quantize import INT32_MAX, Quantizer, error_stats, sum_overflows


@pytest.mark.parametrize("workers,bound", [(1, 1.0), (4, 16.0), (64, 100.0), (3, 0.37)])
def test_scale_is_largest_power_of_two_that_cannot_overflow(workers, bound):
    q = Quantizer(workers, bound)
    assert q.scale == 2.0 ** q.exponent
    assert workers * bound * q.scale <= INT32_MAX < workers * bound * q.scale * 2
    worst = np.full((workers, 8), bound, dtype=np.float32)
    ints = np.stack([q.quantize(w)[0] for w in worst]).astype(np.int64)
    assert not sum_overflows(ints.sum(axis=0, keepdims=True)).any()
    assert ints.sum(axis=0).max() <= INT32_MAX


def test_clipping_and_non_finite_are_counted():
    q = Quantizer(2, 1.0)
    ints, clipped = q.quantize(np.array([0.5, 3.0, -7.0, np.nan, np.inf], dtype=np.float32))
    assert clipped == 4
    np.testing.assert_allclose(q.dequantize(ints), [0.5, 1.0, -1.0, 0.0, 0.0])


def test_sum_error_is_within_half_a_step_per_worker_and_measured():
    workers = 4
    q = Quantizer(workers, 16.0)
    grads = np.random.default_rng(1).standard_normal((workers, 10_000)).astype(np.float32)
    sums = np.stack([q.quantize(g)[0] for g in grads]).astype(np.int64).sum(axis=0)
    approx = q.dequantize(sums)
    exact = grads.astype(np.float64).sum(axis=0)
    stats = error_stats(exact, approx)
    # rounding: workers * 0.5 / scale, plus float32 representation of the result
    assert stats["max_abs_error"] <= workers * 0.5 / q.scale + 1e-6
    assert stats["rel_l2_error"] < 1e-6
    print(f"quantization error of a 4-worker sum: {stats}")


def test_bad_quantizer_settings_rejected():
    with pytest.raises(ValueError, match="workers"):
        Quantizer(0)
    with pytest.raises(ValueError, match="bound"):
        Quantizer(4, float("nan"))
    with pytest.raises(ValueError, match="resolution"):
        Quantizer(64, 1e9)


def test_sum_overflows_flags_rows():
    rows = np.array([[INT32_MAX, 0], [INT32_MAX + 1, 0], [-(2**31) - 1, 5]], dtype=np.int64)
    assert sum_overflows(rows).tolist() == [False, True, True]
