"""Real selective / partial / all-reduce training over torch.distributed (gloo, 127.0.0.1).

Group formation.  ``torch.distributed.new_group`` is collective over the whole job (every rank
must call it, in the same order), which a partial reduce cannot offer: the workers outside a
group are busy computing.  So a group is a fresh ``ProcessGroupGloo`` built only by its
members over a ``PrefixStore("grp/<gid>/", store)`` of the job's TCPStore; the group id is
unique per launch, so no two groups share keys and no rank outside the group takes part.

Roles.  The launcher process hosts the TCPStore and runs the controller (Alg. 3 or a
baseline, the same objects the simulator uses); on an emulated network the same controller
runs as its own process on a host (coordinator.py) and the workers are ordinary training
workers with ``--sync selective`` (selective_sync.py).  Workers run ``host_stack.train.loop.
train_worker`` with ``SelectiveSync`` as their ``GradientSync``: a local momentum-SGD step,
an emulated compute delay drawn from the configured distribution, then "ready" -> wait for
an assignment -> weighted model average inside the assigned group.  Messages go through the
store as an append-only log (``msg/<i>``, i from ``store.add``) so the controller sees them in
order; assignments are ``assign/<rank>/<k>``.  Every wait has a deadline; a worker waits
with the store's server-side WAIT (one request), not by polling, so waiting adds no traffic.

Choices: a group averages *models* (partial reduce's semantics) weighted by each member's
local iteration count (DynSGD-style, stale models weigh less).  Loopback has no
heterogeneous links, so with ``emulate_links`` every member holds the group until the Eq. 2
ring time of the group's slowest (declared) link has passed since launch.  At the end of
training, workers left over when fewer than p remain are released without a sync (a group
below p never launches).
"""

from __future__ import annotations

import datetime
import io
import json
import math
import multiprocessing as mp
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
import torch.distributed as dist

from host_stack.collectives.launch import free_port, reap
from host_stack.collectives.p2p import ring_traffic
from host_stack.experiments.selective.controller import SCHEMES, make_controller
from host_stack.experiments.selective.grouping import ring_time
from host_stack.train.data import digits, shard
from host_stack.train.loop import accuracy, train_worker
from host_stack.train.models import build_model, flat_params, load_flat_params
from host_stack.train.sync import CommStats, MomentumSGD

POLL_S = 0.002
# `inart train --sync selective` options: no transport, table, plot or reference of its own
FLAGS = frozenset({"sync", "plan", "model", "seed", "lr", "momentum", "rounds", "batch",
                   "deadline", "group_p", "out", "json"})


@dataclass
class RealConfig:
    """One real run.  Compute delays: lognormal(median, sigma) seconds per local round, added
    to the real compute (median 0: none, the real compute alone)."""

    model: str = "mlp"
    world: int = 4
    rounds: int = 60
    scheme: str = "selective"
    p: int = 2
    eta: float = 0.3
    theta: float = 1.0
    dt: float = 0.02
    lr: float = 0.05
    momentum: float = 0.9
    batch_size: int = 32
    compute_median: float = 0.02
    compute_sigma: float = 0.5
    bandwidths: list[float] | None = None  # bytes/s per worker; default drawn, paper's shape
    bw_max: float = 16e6
    lam: float = 0.05
    emulate_links: bool = True
    alpha: float = 1e-3
    timeout_s: float = 120.0
    seed: int = 0
    ready_mode: str = "printed"
    port: int = 0

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme: expected one of {SCHEMES}, got {self.scheme!r}")
        if self.world < 2:
            raise ValueError(f"world: expected >= 2 workers, got {self.world}")
        if not 1 <= self.p <= self.world:
            raise ValueError(f"p: expected 1 <= p <= world={self.world}, got {self.p}")
        if self.rounds < 1:
            raise ValueError(f"rounds: expected >= 1, got {self.rounds}")
        if self.compute_median < 0 or self.compute_sigma < 0:
            raise ValueError("compute_median/compute_sigma: expected median >= 0, sigma >= 0")
        if self.bandwidths is None:
            rng = random.Random(self.seed)
            self.bandwidths = [self.bw_max * rng.uniform(self.lam, 1.0) for _ in range(self.world)]
        if len(self.bandwidths) != self.world or min(self.bandwidths) <= 0:
            raise ValueError(f"bandwidths: expected {self.world} positive values (bytes/s)")


def open_store(port: int, master: bool, world: int, timeout_s: float,
           host: str = "127.0.0.1") -> dist.TCPStore:
    return dist.TCPStore(host, port, world + 1, master,
                         timeout=datetime.timedelta(seconds=timeout_s), wait_for_workers=False)


def _post(store: dist.TCPStore, msg: dict[str, object]) -> None:
    idx = store.add("msg_n", 1)
    store.set(f"msg/{idx}", json.dumps(msg))


def _wait_key(store: dist.TCPStore, key: str, deadline: float) -> bytes:
    try:
        store.wait([key], datetime.timedelta(seconds=max(0.001, deadline - time.monotonic())))
    except dist.DistStoreError:
        raise TimeoutError(f"no '{key}' in the store before the deadline") from None
    return store.get(key)


class SelectiveSync:
    """One worker's side of selective / partial / all-reduce (a ``MeasuredSync``): its
    ``history`` counts the group all-reduces (gloo's ring, p2p.ring_traffic), not the store's
    small control messages or the group's connection set-up."""

    def __init__(self, store: dist.TCPStore, rank: int, cfg: RealConfig) -> None:
        self.store, self.rank, self.cfg = store, rank, cfg
        self.optimizer = MomentumSGD(cfg.lr, cfg.momentum)
        self.rng = random.Random(cfg.seed * 1000 + rank)
        self.k = 0
        self.log: list[dict[str, float]] = []
        self.history: list[CommStats] = []

    def step(self, round_: int, params: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        if cfg.compute_median > 0:
            time.sleep(self.rng.lognormvariate(math.log(cfg.compute_median), cfg.compute_sigma))
        params = self.optimizer.apply(torch.as_tensor(params), torch.as_tensor(grad))
        t_ready = time.time()
        _post(self.store, {"kind": "ready", "w": self.rank, "iter": round_ + 1, "t": t_ready})
        deadline = time.monotonic() + cfg.timeout_s
        order = json.loads(_wait_key(self.store, f"assign/{self.rank}/{self.k}", deadline))
        self.k += 1
        t_go = time.time()
        members: list[int] = order["members"]
        payload = wire = 0
        if len(members) > 1:
            index = members.index(self.rank)
            group = dist.ProcessGroupGloo(
                dist.PrefixStore(f"grp/{order['gid']}/", self.store), index,
                len(members), datetime.timedelta(seconds=cfg.timeout_s))
            buf = params * float(order["weights"][index])
            payload, wire = ring_traffic(buf, len(members), index)
            group.allreduce([buf]).wait(datetime.timedelta(seconds=cfg.timeout_s))
            params = buf
            hold = order["launch"] + order["model_s"] - time.time()
            if cfg.emulate_links and hold > 0:
                time.sleep(hold)
        t_done = time.time()
        self.log.append({"wait_s": t_go - t_ready, "sync_s": t_done - t_go,
                         "size": len(members)})
        self.history.append(CommStats(round_, t_done - t_ready, payload, wire))
        last = round_ + 1 == cfg.rounds
        _post(self.store, {"kind": "exit" if last else "train", "w": self.rank, "t": t_done})
        return params

    def close(self) -> None:
        return None


def _worker_main(rank: int, cfg: RealConfig) -> None:
    torch.set_num_threads(1)
    store = open_store(cfg.port, False, cfg.world, cfg.timeout_s)
    try:
        x, y, _, _ = digits(seed=cfg.seed)
        xs, ys = shard(x, y, rank, cfg.world)
        model = build_model(cfg.model, seed=cfg.seed)
        sync = SelectiveSync(store, rank, cfg)
        stats = train_worker(model, xs, ys, sync, cfg.rounds, cfg.batch_size, seed=cfg.seed + rank)
        buf = io.BytesIO()
        torch.save({"params": flat_params(model), "log": sync.log,
                    "loss": [s.loss for s in stats]}, buf)
        store.set(f"result/{rank}", buf.getvalue())
    except Exception as exc:  # report instead of leaving the launcher to time out blindly
        store.set(f"error/{rank}", f"{type(exc).__name__}: {exc}")
        raise


class GroupCoordinator:
    """Runs the controller loop against the store's message log."""

    def __init__(self, cfg: RealConfig, store: dist.TCPStore) -> None:
        self.cfg, self.store = cfg, store
        ranks = list(range(cfg.world))
        bw = dict(enumerate(cfg.bandwidths or []))
        self.bw = bw
        self.model_bytes = 4 * flat_params(build_model(cfg.model, seed=cfg.seed)).numel()
        self.ctl = make_controller(cfg.scheme, ranks, cfg.p, **({} if cfg.scheme != "selective"
                                   else dict(eta=cfg.eta, theta=cfg.theta, dt=cfg.dt,
                                             v=self.model_bytes, bandwidth=lambda: bw,
                                             ready_mode=cfg.ready_mode)))
        self.iters: dict[int, int] = dict.fromkeys(ranks, 0)
        self.assigned: dict[int, int] = dict.fromkeys(ranks, 0)
        self.cursor = 0
        self.gid = 0
        self.groups: list[dict[str, object]] = []
        self.exited: set[int] = set()

    def assign(self, members: list[int]) -> None:
        total = sum(self.iters[w] for w in members)
        weights = [self.iters[w] / total for w in members]
        model_s = ring_time(len(members), min(self.bw[w] for w in members), self.model_bytes,
                            self.cfg.alpha)
        order = {"gid": self.gid, "members": members, "weights": weights,
                 "launch": time.time(), "model_s": model_s}
        self.gid += 1
        if len(members) > 1:
            self.groups.append({"members": members, "model_s": model_s})
        for w in members:
            self.store.set(f"assign/{w}/{self.assigned[w]}", json.dumps(order))
            self.assigned[w] += 1

    def poll(self, until: float) -> list[dict[str, object]]:
        """GetReadyWorkerID(dt): messages arriving before `until` (at least one wait)."""
        out = []
        while True:
            key = f"msg/{self.cursor + 1}"
            if self.store.check([key]):
                out.append(json.loads(self.store.get(key)))
                self.cursor += 1
                continue
            if out or time.monotonic() >= until:
                return out
            time.sleep(POLL_S)

    def run(self, deadline: float, check: Callable[[], None]) -> None:
        """Serve the workers until every one has exited; ``check`` raises when one failed."""
        ctl = self.ctl
        ctl.start(time.time())
        while len(self.exited) < self.cfg.world:
            if time.monotonic() > deadline:
                raise TimeoutError("selective training did not finish before timeout_s")
            check()
            for msg in self.poll(time.monotonic() + self.cfg.dt):
                w, t = int(msg["w"]), float(msg["t"])  # type: ignore[call-overload]
                if msg["kind"] == "ready":
                    self.iters[w] = int(msg["iter"])  # type: ignore[call-overload]
                    ctl.ready(w, t)
                elif msg["kind"] == "train":
                    ctl.sync_done([w], t)
                else:
                    self.exited.add(w)
                    ctl.workers = [x for x in ctl.workers if x != w]
            for g in ctl.decide(time.time()):
                self.assign(list(g))
            alive = set(ctl.workers)
            if ctl.queue and set(ctl.queue) == alive and len(alive) < max(self.cfg.p, 2):
                for w in list(ctl.queue):  # end of training: too few left to form a group
                    ctl.queue.remove(w)
                    self.assign([w])


def train_selective(model_name: str = "mlp", world: int = 4, rounds: int = 60, p: int = 2,
                    scheme: str = "selective", seed: int = 0, **options: object
                    ) -> dict[str, object]:
    """Train `world` worker processes with `scheme`; returns accuracy, timing and groups."""
    cfg = RealConfig(model=model_name, world=world, rounds=rounds, p=p, scheme=scheme,
                     seed=seed, **options)  # type: ignore[arg-type]
    cfg.port = cfg.port or free_port()
    store = open_store(cfg.port, True, cfg.world, cfg.timeout_s)
    ctx = mp.get_context("spawn")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    procs = [ctx.Process(target=_worker_main, args=(r, cfg), daemon=True)
             for r in range(cfg.world)]
    t0 = time.monotonic()
    for proc in procs:
        proc.start()
    launcher = GroupCoordinator(cfg, store)

    def check() -> None:
        for r, proc in enumerate(procs):
            if store.check([f"error/{r}"]):
                raise RuntimeError(f"worker {r}: {store.get(f'error/{r}').decode()}")
            if proc.exitcode not in (None, 0):
                raise RuntimeError(f"worker {r} exited with code {proc.exitcode}")

    try:
        launcher.run(t0 + cfg.timeout_s, check)
        deadline = t0 + cfg.timeout_s
        blobs = [_wait_key(store, f"result/{r}", deadline) for r in range(cfg.world)]
    finally:
        reap(procs)
    wall = time.monotonic() - t0
    results = [torch.load(io.BytesIO(b), weights_only=False) for b in blobs]
    return _summarise(cfg, results, launcher.groups, wall)


def _summarise(cfg: RealConfig, results: list[dict[str, object]],
               groups: list[dict[str, object]], wall: float) -> dict[str, object]:
    _, _, xt, yt = digits(seed=cfg.seed)
    model = build_model(cfg.model, seed=cfg.seed)
    init_acc = accuracy(model, xt, yt)
    accs = []
    for r in results:
        load_flat_params(model, r["params"])  # type: ignore[arg-type]
        accs.append(accuracy(model, xt, yt))
    load_flat_params(model, torch.stack([r["params"] for r in results]).mean(0))  # type: ignore[misc]
    syncs = [e for r in results for e in r["log"] if e["size"] > 1]  # type: ignore[attr-defined]
    sizes = [len(g["members"]) for g in groups]  # type: ignore[arg-type]
    return {"config": asdict(cfg),
            "wall_s": wall, "initial_accuracy": init_acc, "worker_accuracy": accs,
            "average_model_accuracy": accuracy(model, xt, yt),
            "syncs": len(groups), "avg_sync_scale": sum(sizes) / max(1, len(sizes)),
            "min_sync_scale": min(sizes, default=0),
            "avg_sync_s": sum(e["sync_s"] for e in syncs) / max(1, len(syncs)),
            "avg_wait_s": sum(e["wait_s"] for e in syncs) / max(1, len(syncs)),
            "first_loss": [r["loss"][0] for r in results],  # type: ignore[index]
            "last_loss": [r["loss"][-1] for r in results]}  # type: ignore[index]

