"""Selective reduce's controller as a process of its own, for workers on other hosts.

    python -m host_stack.experiments.selective.coordinator --listen 10.0.1.3:29600 \
        --world 4 --p 2 --model mlp --bandwidths 3.1e4,3.1e4,6.2e4,6.2e4

It hosts the job's TCPStore on ``--listen`` and runs Alg. 3's controller (real.py's
``GroupCoordinator``, the one `inart train --sync selective` runs in its launcher) until every
worker has sent its last round; the workers are ordinary training workers started with
``--sync selective`` and ``INART_SELECTIVE_STORE=tcp://HOST:PORT`` (selective_sync.py).  An
emulated network runs it on a host of its own, so the controller's messages cross the
emulated links like the workers' traffic.  stdout: ``{"event": "ready"}`` once the store
listens, ``{"event": "done", ...}`` with the groups it formed at the end; errors: one line on
stderr, exit status 3.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from host_stack.experiments.selective.real import GroupCoordinator, RealConfig, open_store


def parse_host_port(text: str) -> tuple[str, int]:
    """'HOST:PORT' -> (host, port), naming the expectation when it is not."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--listen {text!r}: expected HOST:PORT with a port in 1..65535")
    return host, int(port)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="host_stack.experiments.selective.coordinator",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", required=True, help="HOST:PORT of the store (this host's address)")
    p.add_argument("--world", type=int, required=True, help="workers in the job")
    p.add_argument("--p", type=int, default=2, help="smallest group size")
    p.add_argument("--model", default="mlp", help="the workers' model (its size drives Eq. 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bandwidths", required=True,
                   help="comma-separated bytes/s of every worker's link, in rank order")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds for the whole job")
    return p


def run(args: argparse.Namespace) -> dict[str, object]:
    """Serve the job until every worker exited; returns the groups' summary."""
    host, port = parse_host_port(args.listen)
    try:
        bandwidths = [float(x) for x in args.bandwidths.split(",")]
    except ValueError:
        raise ValueError(f"--bandwidths {args.bandwidths!r}: expected comma-separated "
                         "numbers (bytes/s)") from None
    cfg = RealConfig(model=args.model, world=args.world, p=args.p, seed=args.seed,
                     bandwidths=bandwidths, emulate_links=False, compute_median=0.0,
                     timeout_s=args.timeout, port=port)
    store = open_store(port, True, cfg.world, cfg.timeout_s, host)
    print(json.dumps({"event": "ready"}), flush=True)
    coordinator = GroupCoordinator(cfg, store)

    def check() -> None:
        for r in range(cfg.world):
            if store.check([f"error/{r}"]):
                raise RuntimeError(f"worker {r}: {store.get(f'error/{r}').decode()}")

    t0 = time.monotonic()
    coordinator.run(t0 + cfg.timeout_s, check)
    sizes = [len(g["members"]) for g in coordinator.groups]  # type: ignore[arg-type]
    return {"event": "done", "syncs": len(sizes), "wall_s": time.monotonic() - t0,
            "avg_group": sum(sizes) / max(1, len(sizes)), "min_group": min(sizes, default=0),
            "full_groups": sum(s == cfg.world for s in sizes)}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        print(json.dumps(run(args)), flush=True)
    except (ValueError, RuntimeError, TimeoutError) as exc:
        print(f"coordinator: error: {exc}", file=sys.stderr, flush=True)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
