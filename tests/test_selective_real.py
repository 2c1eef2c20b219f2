"""Real selective reduce: 4 gloo processes on 127.0.0.1 train the digits MLP."""

from __future__ import annotations

import pytest

from host_stack.experiments.selective.real import RealConfig, train_selective


def test_selective_training_with_four_processes_learns() -> None:
    res = train_selective("mlp", world=4, rounds=40, p=2, scheme="selective", seed=1,
                          timeout_s=150)
    assert res["initial_accuracy"] < 0.2
    assert res["average_model_accuracy"] > 0.6
    assert min(res["worker_accuracy"]) > 0.5  # every worker took part, none left behind
    assert res["syncs"] > 0 and res["min_sync_scale"] >= 2  # no group below p
    assert all(last < first for first, last in zip(res["first_loss"], res["last_loss"],
                                                   strict=True))


def test_real_config_validation_names_the_field() -> None:
    with pytest.raises(ValueError, match="p:"):
        RealConfig(world=4, p=5)
    with pytest.raises(ValueError, match="bandwidths"):
        RealConfig(world=3, bandwidths=[1.0, 2.0])
    with pytest.raises(ValueError, match="scheme"):
        RealConfig(scheme="tree")
