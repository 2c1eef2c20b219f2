"""Command-line options of a training job, defined once for the PS, the worker and `inart train`.

The job options are the ones every process of one job must agree on: the launcher passes the
same values to every process it starts; on separate hosts the user passes them by hand, so
they are plain command-line options with the same defaults everywhere.

Which options a ``--sync`` mode uses, it declares itself (``FLAGS``, from the sets below);
`inart train` refuses an option given on its command line that the chosen mode would ignore.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from control_plane.cli.args import add_metrics
from host_stack.ina import wire
from host_stack.ina.addresses import Address, AddressMap
from host_stack.ina.batchio import GSO_BYTES, GSO_MODES
from host_stack.ina.impair import Impairment
from host_stack.ina.jobplan import JobPlan, load_plan
from host_stack.ina.quantize import DEFAULT_BOUND, Quantizer
from host_stack.ina.result_group import parse_group
from host_stack.ina.transport import MTU_PAYLOAD, PACING_MODES, TransportConfig, auto_window

if TYPE_CHECKING:  # the service client (grpc) is imported only by hosts that follow one
    from host_stack.ina.follow import HostVersion, ServiceLink

# host_stack/train/models.py's MODELS, named here so the PS and synthetic workers, which parse
# these options, never import torch (~230 MB per process)
MODEL_NAMES = ("cnn", "mlp")
MODEL_OPTIONS = ("plan", "model", "values", "seed", "lr", "momentum")
# values per packet at most: one Ethernet MTU's UDP payload, or on loopback, where no switch
# reads the packets, one UDP datagram
MAX_N_FRAME = (MTU_PAYLOAD - wire.HEADER_LEN) // 4
MAX_N_LOOPBACK = (GSO_BYTES - wire.HEADER_LEN) // 4
# the INA transport's only
TRANSPORT_OPTIONS = ("bound", "n", "unit_bps", "pacing", "window", "gso", "timeout",
                     "max_retries", "hello_timeout", "pool_size", "impair", "result_group")
JOB_OPTIONS = MODEL_OPTIONS + TRANSPORT_OPTIONS
# what the shared per-worker launcher of `inart train` does with any mode it runs
LAUNCHER_FLAGS = frozenset(MODEL_OPTIONS) | {
    "sync", "rounds", "batch", "deadline", "reference", "out", "json", "csv", "plot", "every",
    "keep_logs", "quiet", "fork_server"}
GIVEN = "given_flags"  # args attribute: dests of the options given on the command line


def job_argv(args: argparse.Namespace, dests: tuple[str, ...] = JOB_OPTIONS) -> list[str]:
    """The shared options of ``args`` (those of ``dests``) as a command line, for the
    processes a launcher starts."""
    out: list[str] = []
    for dest in dests:
        value = getattr(args, dest)
        if value is not None:
            out += ["--" + dest.replace("_", "-"), str(value)]
    return out


def add_job_args(parser: argparse.ArgumentParser, plan_required: bool = True) -> None:
    """Options shared by `python -m host_stack.ina.ps`, `... .worker` and `inart train`."""
    g = parser.add_argument_group("job (every process must get the same values)")
    g.add_argument("--plan", required=plan_required,
                   help="inart.plan/1 JSON file" + ("" if plan_required else
                                                     " (or --service and --job-id)"))
    g.add_argument("--model", default="cnn", choices=[*MODEL_NAMES, "synthetic"],
                   help="model to train; 'synthetic' sends random gradients (transport only)")
    g.add_argument("--values", type=int, default=100_000,
                   help="gradient length for --model synthetic")
    g.add_argument("--seed", type=int, default=0, help="initial weights and data order")
    g.add_argument("--lr", type=float, default=0.05, help="PS learning rate")
    g.add_argument("--momentum", type=float, default=0.9, help="PS momentum")
    g.add_argument("--bound", type=float, default=DEFAULT_BOUND,
                   help="gradient clip bound that sets the quantization scale")
    g.add_argument("--n", type=int, default=None,
                   help=f"int32 values per packet (default {TransportConfig.n}, the P4 "
                        f"program's N; up to {MAX_N_FRAME} in a 1500-byte frame, "
                        f"{MAX_N_LOOPBACK} where every address of the job is on loopback)")
    g.add_argument("--unit-bps", type=float, default=None,
                   help="bit/s of one topology rate unit (pacing = f * x_s * this; "
                        "default: unpaced)")
    g.add_argument("--pacing", choices=PACING_MODES, default=TransportConfig.pacing,
                   help="who paces each PS stream: user (a token bucket in the worker, the "
                        "default) or kernel (the host's egress queue holds a class per stream "
                        "at its rate, set up by the emulation: emulation/network/host_pacing.py)")
    g.add_argument("--window", type=int, default=None,
                   help=f"outstanding chunks per PS (default: {TransportConfig.window}, fewer "
                        "for many workers, so every window fits the PS's socket buffer)")
    g.add_argument("--gso", choices=GSO_MODES, default=TransportConfig.gso,
                   help="where sends go as UDP GSO batches: loopback (default), all (only "
                        "where no software P4 switch reads the frames off a veth), off")
    g.add_argument("--timeout", type=float, default=TransportConfig.timeout_s,
                   help="RETX timeout (s) before the first RTT sample")
    g.add_argument("--max-retries", type=int, default=TransportConfig.max_retries,
                   help="RETX before giving up")
    g.add_argument("--hello-timeout", type=float, default=TransportConfig.hello_timeout_s,
                   help="how long a worker waits for every PS to answer HELLO (s)")
    g.add_argument("--pool-size", type=int, default=TransportConfig.pool_size,
                   help="switch aggregator slots")
    g.add_argument("--impair", default="",
                   help="inject on send, e.g. loss=0.05,dup=0.05,reorder=0.05 (tests)")
    g.add_argument("--result-group", default=None, metavar="GROUP:PORT",
                   help="loopback jobs: PSs send each RESULT once to this IPv4 multicast "
                        "group, which every worker joins, instead of once per worker "
                        "(`inart train --script` picks one)")


def add_round_args(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The training loop's options, shared by the worker and `inart train`."""
    parser.add_argument("--rounds", type=int, default=100, help="training rounds (iterations)")
    parser.add_argument("--batch", type=int, default=32, help="minibatch per worker")


def process_parser(module: str, description: str | None, node: str) -> argparse.ArgumentParser:
    """The parser of one job process (``python -m MODULE``): the job options, the node it is
    (``--ps`` or ``--worker``, an id of the plan) and the address map."""
    p = argparse.ArgumentParser(prog=f"python -m {module}", description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_job_args(p, plan_required=False)
    p.add_argument(f"--{node}", required=True, help=f"this {node}'s node id in the plan")
    p.add_argument("--addresses", help="address map JSON file (with --plan)")
    add_metrics(p)
    s = p.add_argument_group("service (instead of --plan and --addresses: follow the plan "
                             "versions of a job of `inart serve`)")
    s.add_argument("--service", metavar="ADDRESS",
                   help="the service's gRPC address (host:port or unix:PATH)")
    s.add_argument("--job-id", type=int, help="the job's id in the service")
    s.add_argument("--token-file", help="bearer token for a service off localhost")
    s.add_argument("--tls-ca", help="PEM CA certificate of a service that serves TLS (off "
                                    "localhost)")
    return p


def service_link(args: argparse.Namespace, participant: str) -> ServiceLink | None:
    """The link to the service when ``args`` name one (and no plan file), else None."""
    if getattr(args, "service", None) is None:
        if getattr(args, "job_id", None) is not None:
            raise ValueError("--job-id: only with --service")
        return None
    if args.plan or args.addresses:
        raise ValueError("--service: the plan and addresses come from the service; "
                         "drop --plan/--addresses")
    if args.job_id is None or args.job_id < 1:
        raise ValueError(f"--job-id {args.job_id}: expected the service's job id (>= 1)")
    from control_plane.service.auth import read_token
    from host_stack.ina.follow import ServiceLink

    token = read_token(args.token_file) if args.token_file else None
    return ServiceLink(args.service, args.job_id, participant, token, args.tls_ca)


def _noting(base: type[argparse.Action]) -> type[argparse.Action]:
    """``base`` that also adds its dest to ``args.given_flags`` when its option is given."""

    class Noting(base):
        def __call__(self, parser, namespace, values, option_string=None) -> None:
            super().__call__(parser, namespace, values, option_string)
            setattr(namespace, GIVEN, getattr(namespace, GIVEN) | {self.dest})

    return Noting


def track_given(parser: argparse.ArgumentParser) -> None:
    """Make the options added to ``parser`` from now on record that they were given, so
    ``reject_unused`` can tell ``--window 32`` from the default 32."""
    for name, base in ((None, argparse._StoreAction), ("store", argparse._StoreAction),
                       ("store_true", argparse._StoreTrueAction)):
        parser.register("action", name, _noting(base))
    parser.set_defaults(**{GIVEN: frozenset()})


def reject_unused(args: argparse.Namespace, used: frozenset[str], mode: str) -> None:
    """ValueError naming every option given on the command line that ``mode`` ignores."""
    unused = sorted(getattr(args, GIVEN) - used)
    if unused:
        flags = ", ".join("--" + dest.replace("_", "-") for dest in unused)
        uses = ", ".join("--" + dest.replace("_", "-") for dest in sorted(used))
        raise ValueError(f"{flags}: not used by --sync {mode} (it uses {uses})")


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
    result_group: Address | None = None  # loopback: where PSs multicast RESULTs

    def initial_params(self, args: argparse.Namespace) -> np.ndarray:
        """Flat float32 initial parameters padded to whole chunks (zeros for synthetic)."""
        padded = np.zeros(self.n_chunks * self.n, dtype=np.float32)
        if args.model != "synthetic":
            from host_stack.train.models import build_model, flat_params

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
    from host_stack.train.models import build_model

    return sum(p.numel() for p in build_model(args.model, args.seed).parameters())


def load_job(args: argparse.Namespace, addresses: AddressMap | None = None,
             impair_seed: int = 0, version: HostVersion | None = None) -> Job:
    """Validate the plan, addresses and options (the plan and addresses of ``version`` when
    the job follows the service); nothing is started yet."""
    if version is not None:
        plan, addresses = version.plan, version.addresses
    elif not args.plan:
        raise ValueError("--plan: a plan file is required (or --service and --job-id)")
    else:
        plan = load_plan(args.plan)
    if addresses is None:
        if not getattr(args, "addresses", None):
            raise ValueError("--addresses: an address map file is required for this process")
        addresses = AddressMap.load(args.addresses, plan.ps_ids)
    nodes = plan.ps_ids + plan.worker_ids
    addresses.require(nodes)
    n = TransportConfig.n if args.n is None else args.n
    top = MAX_N_LOOPBACK if all(addresses[x][0].startswith("127.") for x in nodes) \
        else MAX_N_FRAME
    if not 1 <= n <= top:
        fills = "one loopback datagram" if top == MAX_N_LOOPBACK else "a 1500-byte frame"
        raise ValueError(f"--n {n}: expected 1..{top} ({top} values fill {fills})")
    n_values = model_size(args)
    # a service's version brings the slot pool of its lane on the switches
    pool = version.pool_size if version is not None else args.pool_size
    window = auto_window(plan.workers, pool, n) if args.window is None else args.window
    config = TransportConfig(n=n, window=window, gso=args.gso, timeout_s=args.timeout,
                             max_retries=args.max_retries, pool_size=pool,
                             hello_timeout_s=args.hello_timeout, pacing=args.pacing)
    group = getattr(args, "result_group", None)
    return Job(plan=plan, addresses=addresses, n=n, n_values=n_values,
               ranges=plan.chunk_ranges(n_values, n),
               quantizer=Quantizer(plan.workers, args.bound), transport=config,
               impairment=Impairment.parse(args.impair, seed=impair_seed),
               result_group=parse_group(group, addresses, nodes) if group else None)


