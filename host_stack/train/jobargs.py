"""Options every process of one INA job must agree on (PS, worker, launcher).

The launcher passes the same values to every process it starts; on separate hosts the user
passes them by hand, so they are plain command-line options with the same defaults everywhere.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from host_stack.ina import wire
from host_stack.ina.addresses import AddressMap
from host_stack.ina.impair import Impairment
from host_stack.ina.jobplan import JobPlan, load_plan
from host_stack.ina.quantize import DEFAULT_BOUND, Quantizer
from host_stack.ina.transport import TransportConfig
from host_stack.train.models import MODELS, build_model, flat_params

JOB_OPTIONS = ("plan", "model", "values", "seed", "lr", "momentum", "bound", "n", "unit_bps",
               "window", "timeout", "max_retries", "hello_timeout", "pool_size", "impair")


def job_argv(args: argparse.Namespace) -> list[str]:
    """The shared options of ``args`` as a command line, for the processes a launcher starts."""
    out: list[str] = []
    for dest in JOB_OPTIONS:
        value = getattr(args, dest)
        if value is not None:
            out += ["--" + dest.replace("_", "-"), str(value)]
    return out


def add_job_args(parser: argparse.ArgumentParser) -> None:
    """Options shared by `python -m host_stack.ina.ps`, `... .worker` and `inart train`."""
    g = parser.add_argument_group("job (every process must get the same values)")
    g.add_argument("--plan", required=True, help="inart.plan/1 JSON file")
    g.add_argument("--model", default="cnn", choices=sorted(MODELS) + ["synthetic"],
                   help="model to train; 'synthetic' sends random gradients (transport only)")
    g.add_argument("--values", type=int, default=100_000,
                   help="gradient length for --model synthetic")
    g.add_argument("--seed", type=int, default=0, help="initial weights and data order")
    g.add_argument("--lr", type=float, default=0.05, help="PS learning rate")
    g.add_argument("--momentum", type=float, default=0.9, help="PS momentum")
    g.add_argument("--bound", type=float, default=DEFAULT_BOUND,
                   help="gradient clip bound that sets the quantization scale")
    g.add_argument("--n", type=int, default=wire.DEFAULT_N, help="int32 values per packet")
    g.add_argument("--unit-bps", type=float, default=None,
                   help="bit/s of one topology rate unit (pacing = f * x_s * this; "
                        "default: unpaced)")
    g.add_argument("--window", type=int, default=32, help="outstanding chunks per PS")
    g.add_argument("--timeout", type=float, default=0.2,
                   help="RETX timeout (s) before the first RTT sample")
    g.add_argument("--max-retries", type=int, default=30, help="RETX before giving up")
    g.add_argument("--hello-timeout", type=float, default=30.0,
                   help="how long a worker waits for every PS to answer HELLO (s)")
    g.add_argument("--pool-size", type=int, default=4096, help="switch aggregator slots")
    g.add_argument("--impair", default="",
                   help="inject on send, e.g. loss=0.05,dup=0.05,reorder=0.05 (tests)")


@dataclass
class Job:
    """A parsed, validated job: the plan plus everything derived from the shared options."""

    plan: JobPlan
    addresses: AddressMap
    n: int
    n_values: int
    ranges: dict[str, tuple[int, int]]
    quantizer: Quantizer
    transport: TransportConfig
    impairment: Impairment

    def initial_params(self, args: argparse.Namespace) -> np.ndarray:
        """Flat float32 initial parameters padded to whole chunks (zeros for synthetic)."""
        padded = np.zeros(self.n_chunks * self.n, dtype=np.float32)
        if args.model != "synthetic":
            padded[:self.n_values] = flat_params(build_model(args.model, args.seed)).numpy()
        return padded

    @property
    def n_chunks(self) -> int:
        return -(-self.n_values // self.n)


def model_size(args: argparse.Namespace) -> int:
    if args.model == "synthetic":
        if args.values < 1:
            raise ValueError(f"--values {args.values}: expected >= 1")
        return args.values
    return sum(p.numel() for p in build_model(args.model, args.seed).parameters())


def load_job(args: argparse.Namespace, addresses: AddressMap | None = None,
             impair_seed: int = 0) -> Job:
    """Validate the plan, addresses and options; nothing is started yet."""
    plan = load_plan(args.plan)
    if addresses is None:
        if not getattr(args, "addresses", None):
            raise ValueError("--addresses: an address map file is required for this process")
        addresses = AddressMap.load(args.addresses, plan.ps_ids)
    addresses.require(plan.ps_ids + plan.worker_ids)
    if args.n < 1 or packet_too_big(args.n):
        raise ValueError(f"--n {args.n}: expected 1..{(1472 - wire.HEADER_LEN) // 4}")
    n_values = model_size(args)
    config = TransportConfig(n=args.n, window=args.window, timeout_s=args.timeout,
                             max_retries=args.max_retries, pool_size=args.pool_size,
                             hello_timeout_s=args.hello_timeout)
    return Job(plan=plan, addresses=addresses, n=args.n, n_values=n_values,
               ranges=plan.chunk_ranges(n_values, args.n),
               quantizer=Quantizer(plan.workers, args.bound), transport=config,
               impairment=Impairment.parse(args.impair, seed=impair_seed))


def packet_too_big(n: int) -> bool:
    """Packets must fit one Ethernet MTU (1500 - IPv4 20 - UDP 8 = 1472 bytes of payload)."""
    return wire.packet_len(n) > 1472
