"""`--sync selective`: a training worker's side of selective reduce, for the shared launcher.

The worker joins the store its coordinator hosts (``INART_SELECTIVE_STORE=tcp://HOST:PORT``,
coordinator.py), steps a local MomentumSGD, reports ready, and averages its model inside the
group the coordinator assigns (real.py's ``SelectiveSync``).  Its round records carry the
group all-reduce's bytes like every other scheme's.  The workers' models differ between
syncs by design (partial reduce), so their final parameters are not expected to agree.
"""

from __future__ import annotations

import os

from host_stack.experiments.selective.real import RealConfig, SelectiveSync, open_store
from host_stack.train.jobargs import LAUNCHER_FLAGS

USES_PS = False
FLAGS = LAUNCHER_FLAGS
STORE_ENV = "INART_SELECTIVE_STORE"
TIMEOUT_S = 300.0  # a worker's wait for an assignment or a group


def build(ctx) -> SelectiveSync:
    """Connect to the coordinator's store and return this rank's selective sync."""
    url = os.environ.get(STORE_ENV, "")
    host, _, port = url.removeprefix("tcp://").rpartition(":")
    if not url.startswith("tcp://") or not host or not port.isdigit():
        raise ValueError(f"--sync selective: set {STORE_ENV}=tcp://HOST:PORT (the coordinator's "
                         f"store, host_stack.experiments.selective.coordinator), got {url!r}")
    world = len(ctx.job.plan.worker_ids)
    cfg = RealConfig(model=ctx.args.model, world=world, rounds=ctx.args.rounds,
                     lr=ctx.args.lr, momentum=ctx.args.momentum, seed=ctx.args.seed,
                     compute_median=0.0, emulate_links=False, timeout_s=TIMEOUT_S,
                     port=int(port))
    store = open_store(cfg.port, False, world, TIMEOUT_S, host)
    return SelectiveSync(store, ctx.rank, cfg)
