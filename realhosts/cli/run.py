"""`inart run --inventory hosts.yaml`: a job on real hosts and standalone switches.

    inart run --inventory hosts.yaml [--scheme inart | --plan plan.json] [--mode train]
              [--rounds R] [--scale MBPS_PER_UNIT] [--check]

Validates the inventory, checks every host (reachable, python imports inart, interface with
the deploy layer's address), installs the plan on the switches, runs the PSs and workers on
the hosts, and prints the emulation's table (measured vs planned).  Ctrl-C, a failing host or
the deadline stop every process on every host.  Writes run.json / run.csv and the hosts' logs
(out/run/hosts) under --out.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from control_plane.cli.args import add_out, add_quiet, command, positive
from control_plane.cli.install import check_topology
from control_plane.deploy.addressing import AddressingError, assign
from control_plane.deploy.entries import EntriesError
from control_plane.deploy.pipeline import TNA_BUILD, PipelineError
from control_plane.deploy.transaction import DeployError
from control_plane.drivers.p4runtime import P4RuntimeError
from control_plane.drivers.tofino.ports import PortsError
from control_plane.model.plan import Plan, PlanError
from control_plane.model.topology import TopologyError
from control_plane.p4build.sources import BuildError, load_build_info
from control_plane.solver.solve import SCHEMES, plan_for
from emulation.measure.metrics import table, write_rows
from host_stack.ddp.script_args import add_script_args, script_job, script_lines
from host_stack.ina import wire
from host_stack.remote.launchers import Fleet, LaunchError
from host_stack.train.hostrun import MODES, TrafficConfig, TrafficError
from host_stack.train.jobargs import MODEL_NAMES
from realhosts.checks import HostCheckError, check_hosts
from realhosts.inventory import Inventory, InventoryError, load
from realhosts.run import run_inventory

INPUT_ERRORS = (InventoryError, PlanError, TopologyError, AddressingError, EntriesError,
                PipelineError, PortsError, BuildError, ValueError)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = command(subparsers, "run", "run a job on real hosts (inventory file)", __doc__)
    p.add_argument("--inventory", required=True, help="inart.inventory/1 YAML file")
    p.add_argument("-s", "--scheme", default="inart", choices=SCHEMES, metavar="SCHEME",
                   help=f"plan the inventory's topology with this scheme: one of "
                        f"{', '.join(SCHEMES)} (default inart)")
    p.add_argument("--plan", help="run this inart.plan/1 file instead (its topology must be "
                                  "the inventory's)")
    p.add_argument("--mode", choices=MODES, default="synthetic",
                   help="synthetic gradients with every sum checked, or real training")
    p.add_argument("--model", default="mlp", choices=MODEL_NAMES,
                   help="the model whose gradients flow with --mode train (default mlp)")
    p.add_argument("--rounds", type=positive(int), default=3, help="iterations")
    p.add_argument("--values", type=int, default=32 * 1500,
                   help="gradient length (int32 values) in synthetic mode")
    p.add_argument("--scale", type=positive(), default=0.25, metavar="MBPS",
                   help="Mbit/s per topology capacity unit the hosts pace at (default 0.25, "
                        "as `inart emulate`)")
    p.add_argument("--n", type=int, default=None,
                   help=f"values per packet (default {wire.DEFAULT_N}; for tofino switches the "
                        f"TNA build's N, p4src/build/tna/build-info.json)")
    p.add_argument("--seed", type=int, default=0, help="solver, gradient and training seed")
    p.add_argument("--deadline", type=float, default=600.0, help="seconds for the whole job")
    add_script_args(p, "host, with --mode train (copied to the same path on each host)")
    p.add_argument("--check", action="store_true",
                   help="validate the inventory and check the hosts; install and run nothing")
    add_out(p, "run", "the job's results and the hosts' logs")
    add_quiet(p)
    p.set_defaults(func=run)


def values_per_packet(target: str, tna_build: Path = TNA_BUILD) -> int:
    """N the hosts must use: the TNA build's own (it is not the v1model default) for Tofino."""
    if target != "tofino":
        return wire.DEFAULT_N
    return int(load_build_info(tna_build)["N"])


def _interrupt(signum, _frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run(args: argparse.Namespace) -> int:
    try:
        inventory = load(args.inventory)
        if args.plan:
            plan = Plan.load(args.plan)
            try:
                check_topology(plan.topology, inventory.topology, inventory.topology_spec)
            except TopologyError as exc:
                raise TopologyError(f"--plan {args.plan}: not a plan of the inventory's "
                                    f"topology: {exc}") from None
        else:
            plan = plan_for(inventory.topology, args.scheme, args.seed)
        n = args.n or values_per_packet(inventory.target)
        cfg = TrafficConfig(mode=args.mode, rounds=args.rounds, values=args.values,
                            model=args.model, unit_bps=args.scale * 1e6, n=n, seed=args.seed,
                            deadline_s=args.deadline)
        cfg.check()
        script = script_job(args, args.deadline)
    except OSError as exc:
        print(f"inart run: error: --plan {args.plan}: {exc.strerror}", file=sys.stderr)
        return 2
    except (*INPUT_ERRORS, TrafficError) as exc:
        print(f"inart run: error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        return check_only(inventory)
    old = signal.signal(signal.SIGTERM, _interrupt)
    out = Path(args.out)
    try:
        result = run_inventory(inventory, plan, cfg, out, args.quiet, script=script)
    except KeyboardInterrupt:
        print(f"inart run: interrupted; every process on every host stopped (logs in "
              f"{out / 'hosts'})", file=sys.stderr)
        return 130
    except (HostCheckError, LaunchError, TrafficError, DeployError, P4RuntimeError,
            *INPUT_ERRORS, RuntimeError) as exc:
        print(f"inart run: error: {exc}\n(every process on every host stopped; logs in "
              f"{out / 'hosts'})", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, old)
    if script is not None:
        for line in script_lines(result.row):
            print(line)
        jpath, cpath = write_rows([result.row], out, "run")
        print(f"wrote {jpath} and {cpath}")
        return 0
    print(table([result.row]))
    print("net B/iter: the hosts' links only (both directions); switch-to-switch links are "
          "not visible from the hosts")
    if not result.row["event_counters"]:
        print(f"(no event counters: read over P4Runtime from embedded/bmv2 switches only, "
              f"not {inventory.driver}/{inventory.target})")
    if args.mode == "train":
        print(train_summary(result.job.done))
    jpath, cpath = write_rows([result.row], out, "run")
    print(f"wrote {jpath} and {cpath}")
    if result.row["exact"] is False:
        print("inart run: WRONG AGGREGATES: " + ", ".join(result.job.mismatches[:5]),
              file=sys.stderr)
        return 1
    return 0


def train_summary(done: dict[str, dict]) -> str:
    """Accuracy and whether every worker ended with the same parameters."""
    accs = sorted({d.get("accuracy") for d in done.values()}, key=str)
    digests = {d.get("params_sha256") for d in done.values()}
    same = "yes" if len(digests) == 1 else f"NO ({len(digests)} different)"
    return (f"train: test accuracy {', '.join(f'{a:.4f}' for a in accs if a is not None)}; "
            f"same parameters on every worker: {same} (sha256 {min(digests)[:16]}...)")


def check_only(inventory: Inventory) -> int:
    """`--check`: every host's probe, nothing else."""
    fleet = Fleet(inventory.hosts, Path("/tmp"))
    try:
        macs = check_hosts(fleet, inventory, assign(inventory.topology))
    except HostCheckError as exc:
        print(f"inart run: {exc}", file=sys.stderr)
        return 1
    for name, spec in inventory.hosts.items():
        print(f"{spec.describe()}: ok, {spec.interface} {macs[name]}")
    return 0
