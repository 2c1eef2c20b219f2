"""The real PS-balancing run: N node processes in tc-limited namespaces and the scheduler.

The scheduler (this process, root namespace, reaching the bridge over an unlimited veth)
re-plans every iteration from the probe rates the nodes measured in the previous one:
capabilities (probe.ThroughputTable) -> shares (loads) -> slices (Alg. 2) -> plan to every
node -> wait for every "done".  Link rates are re-drawn every `period` seconds from the same
seeded sequence for every scheme, so schemes see the same network history.
"""

from __future__ import annotations

import json
import random
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from control_plane.repo import child_env
from host_stack.experiments.psbalance.loads import closed_form, iteration_time, plan_shares
from host_stack.experiments.psbalance.netlab import StarLab, star_lab
from host_stack.experiments.psbalance.probe import ThroughputTable
from host_stack.experiments.psbalance.slices import assign_slices, bytes_per_ps

CAPABILITIES = ("probe", "probe+data", "tc")


@dataclass
class RunConfig:
    """Scaled-down reproduction settings (see experiment.py for the defaults used)."""

    nodes: int = 6
    max_mbit: float = 22.0  # paper: 220 Mbit/s, scaled by 1/10 for a 2-core machine
    min_fraction: float = 0.1
    period: float = 20.0  # paper: 300 s
    duration: float = 40.0  # per (model, scheme) segment
    slice_bytes: int = 64 * 1024
    probe_bytes: int = 40_000  # paper: size_probe = 10 000 parameters
    num_probe: int = 1
    threshold_s: float = 0.01  # Alg. 1's similarity threshold (paper: 1 s at its scale)
    timeout_s: float = 60.0
    seed: int = 0
    # "probe": node capabilities from forecast/probe rates; "probe+data": and from the data
    # messages too, averaged (the paper, 3.2); "tc": the rates tc set (an oracle, to separate
    # the planning from the measurement)
    capabilities: str = "probe"

    def __post_init__(self) -> None:
        if self.nodes < 3:
            raise ValueError(f"nodes: expected >= 3, got {self.nodes}")
        if not 0 < self.min_fraction <= 1:
            raise ValueError("min_fraction: expected 0 < f <= 1")
        if self.capabilities not in CAPABILITIES:
            raise ValueError(f"capabilities: expected one of {CAPABILITIES}, "
                             f"got {self.capabilities!r}")
        if self.slice_bytes <= 0 or self.slice_bytes % 4 or self.probe_bytes % 4:
            raise ValueError("slice_bytes/probe_bytes: expected positive multiples of 4 "
                             "(float32)")

    def rate_draws(self, periods: int) -> list[list[float]]:
        rng = random.Random(self.seed)
        return [[round(self.max_mbit * rng.uniform(self.min_fraction, 1.0), 3)
                 for _ in range(self.nodes)] for _ in range(periods)]


def capability_distortion(estimated: dict[str, float], true: dict[str, float]) -> float:
    """max_i (est_i / true_i) / min_i (est_i / true_i): 1 when the estimates are right up to
    a common factor (all that shares depend on), k when one node is over-rated k-fold
    relative to another."""
    ratios = [estimated[n] / true[n] for n in true]
    return max(ratios) / min(ratios)


class Cluster:
    """The node processes in a lab and their control connections."""

    def __init__(self, cfg: RunConfig, lab: StarLab) -> None:
        self.cfg = cfg
        self.lab = lab
        self.procs: list = []
        self.ctrl: dict[int, tuple[socket.socket, object]] = {}

    def start(self) -> None:
        cfg = self.cfg
        self.lab.set_rates(cfg.rate_draws(1)[0])
        server = socket.create_server((self.lab.launcher_addr, 0), backlog=cfg.nodes)
        server.settimeout(cfg.timeout_s)
        port = server.getsockname()[1]
        addrs = ",".join(self.lab.addr(i) for i in range(cfg.nodes))
        env = child_env(OMP_NUM_THREADS="1")
        for i in range(cfg.nodes):
            self.procs.append(self.lab.popen(i, [
                sys.executable, "-m", "host_stack.experiments.psbalance.node", "--id", str(i),
                "--addrs", addrs, "--port", "47600", "--ctrl",
                f"{self.lab.launcher_addr}:{port}", "--timeout", str(cfg.timeout_s)],
                env=env))
        while len(self.ctrl) < cfg.nodes:
            conn, _ = server.accept()
            conn.settimeout(cfg.timeout_s)
            f = conn.makefile("rwb")
            hello = json.loads(f.readline())
            self.ctrl[int(hello["hello"])] = (conn, f)
        server.close()

    def iteration(self, it: int, model_bytes: int,
                  slices: list) -> tuple[float, dict, dict]:
        """Send the plan, wait for every node; returns (seconds, {(src, dst): probe rate},
        {(src, dst): rate of everything src sent dst})."""
        msg = json.dumps({"iter": it, "model_bytes": model_bytes,
                          "slices": [[s.offset, s.length, int(s.ps), s.probe] for s in slices]})
        for _, f in self.ctrl.values():
            f.write(msg.encode() + b"\n")  # type: ignore[attr-defined]
            f.flush()  # type: ignore[attr-defined]
        for i, (_, f) in self.ctrl.items():
            if not json.loads(f.readline() or b"{}").get("ready"):  # type: ignore[attr-defined]
                raise RuntimeError(f"node {i} did not get ready for iteration {it}")
        t0 = time.monotonic()
        for _, f in self.ctrl.values():
            f.write(b'{"go": true}\n')  # type: ignore[attr-defined]
            f.flush()  # type: ignore[attr-defined]
        rates, data_rates = {}, {}
        for dst, (_, f) in self.ctrl.items():
            line = f.readline()  # type: ignore[attr-defined]
            if not line:
                raise RuntimeError(f"node {dst} closed its control connection")
            reply = json.loads(line)
            rates.update({(src, str(dst)): r for src, r in reply["rates"].items()})
            data_rates.update({(src, str(dst)): r for src, r in reply["data_rates"].items()})
        return time.monotonic() - t0, rates, data_rates

    def segment(self, scheme: str, model_bytes: int, progress=None,
                model_name: str | None = None) -> list[dict]:
        """Run `scheme` for cfg.duration seconds; one record per iteration, with the time the
        cost model predicts for the bytes each PS got at the rates tc set (``t_model_s``)."""
        cfg = self.cfg
        periods = int(cfg.duration // cfg.period) + 1
        draws = cfg.rate_draws(periods)
        names = [str(i) for i in range(cfg.nodes)]
        # one iteration's record: its probe, and with "probe+data" also its data messages
        table = ThroughputTable(names, window=2 if cfg.capabilities == "probe+data" else 1,
                                default=1.0)
        probe = min(cfg.probe_bytes, (model_bytes // (4 * cfg.nodes)) // 4 * 4)
        start, current, it, out = time.monotonic(), -1, 0, []
        while (now := time.monotonic() - start) < cfg.duration:
            k = min(int(now // cfg.period), periods - 1)
            if k != current:
                self.lab.set_rates(draws[k])
                current = k
            true_rates = {n: mbit * 1e6 / 8 for n, mbit in zip(names, draws[k], strict=True)}
            caps = true_rates if cfg.capabilities == "tc" else table.update_capabilities()
            shares = plan_shares(scheme, caps, model_bytes, cfg.threshold_s, model_name)
            slices = assign_slices(shares, model_bytes, cfg.slice_bytes, probe, cfg.num_probe)
            seconds, rates, data_rates = self.iteration(it, model_bytes, slices)
            for (src, dst), r in rates.items():
                table.record(src, dst, r)
            if cfg.capabilities == "probe+data":
                for (src, dst), r in data_rates.items():
                    table.record(src, dst, r)
            sent = {n: float(b) for n, b in bytes_per_ps(slices).items()}
            out.append({"scheme": scheme, "model_bytes": model_bytes, "iter": it,
                        "t": now, "period": k, "seconds": seconds,
                        "t_model_s": iteration_time(sent, true_rates, model_bytes),
                        "t_star_s": iteration_time(closed_form(true_rates, model_bytes)[0],
                                                   true_rates, model_bytes),
                        "max_share": max(shares.values()) / model_bytes,
                        "cap_distortion": capability_distortion(caps, true_rates)})
            it += 1
            if progress is not None:
                progress.update(min(time.monotonic() - start, cfg.duration) - progress.n)
        return out

    def stop(self) -> None:
        """Tell every node to stop and wait for it (killing one that hangs)."""
        for _, (conn, f) in list(self.ctrl.items()):
            try:
                f.write(b'{"stop": true}\n')  # type: ignore[attr-defined]
                f.flush()  # type: ignore[attr-defined]
                conn.close()
            except OSError:
                pass
        self.ctrl.clear()
        for proc in self.procs:  # a node stuck mid-iteration is not waited for
            try:
                proc.wait(timeout=3)
            except Exception:
                proc.kill()
                proc.wait(timeout=5)
        self.procs.clear()


@contextmanager
def started(cfg: RunConfig) -> Iterator[Cluster]:
    """A lab with every node process connected; on exit (also a failed start) the nodes are
    stopped and the lab removed."""
    with star_lab(cfg.nodes) as lab:
        cluster = Cluster(cfg, lab)
        try:
            cluster.start()
            yield cluster
        finally:
            cluster.stop()
