"""``GradientSync`` for the collectives: average the gradient with a ring, RAT trees, an RSGCM
schedule or torch's all_reduce, then step a local MomentumSGD (the rule the INA PS applies)."""

from __future__ import annotations

from typing import Any

from host_stack.collectives.p2p import SENT
from host_stack.collectives.schemes import SchemeConfig, bind, prepare
from host_stack.train.sync import AllReduceSync, MomentumSGD


def make_sync(scheme: str | SchemeConfig, rank: int, world: int, lr: float,
              momentum: float = 0.9, **prepare_kwargs: Any) -> AllReduceSync:
    """A rank's sync for ``scheme`` ("ring", "tree", "rsgcm", "torch") or a prepared config.

    Passing a config prepared once in the parent guarantees every rank uses the same trees or
    schedule; with a name, each rank prepares its own (deterministic for a given seed).
    Must be called after the process group exists (rsgcm creates its groups here).
    """
    cfg = scheme if isinstance(scheme, SchemeConfig) else prepare(scheme, world,
                                                                    **prepare_kwargs)
    if cfg.world != world:
        raise ValueError(f"world: the config was prepared for {cfg.world} ranks, got {world}")
    return AllReduceSync(bind(cfg, rank), world, MomentumSGD(lr, momentum),
                         sent=lambda: (SENT.total, SENT.wire))
