"""`inart lab up|down`: namespace hosts and standalone switches on this machine, for
`inart run --inventory` without real machines.

    inart lab up [--topology fig1] [--name ilab] [--out out/lab]
    inart run --inventory out/lab/inventory.yaml
    inart lab down [--name ilab]

`lab up` makes one network namespace per worker and PS, one embedded P4 switch process per
switch (no program yet: `inart run` installs the plan), veths as cables, writes the inventory
file and prints what it made; the switches run on in the background.  `lab down` removes
exactly that, also after a crash (realhosts/lab.py keeps a state file).  Needs root.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from control_plane.cli.args import add_out, add_topology, command
from control_plane.model.topologies import build_topology, command_seed
from control_plane.model.topology import TopologyError
from emulation.targets import TargetError
from host_stack.netns import NetnsError
from realhosts.inventory import InventoryError, load
from realhosts.lab import NAME, LabError, down, up

ERRORS = (LabError, NetnsError, TargetError, TopologyError, InventoryError, OSError)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = command(subparsers, "lab", "namespace hosts and standalone switches for `inart run`",
                __doc__)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    u = sub.add_parser("up", help="make the lab and write its inventory file")
    add_topology(u)
    u.add_argument("--ps", type=int, default=None, help="number of PSs (fat-tree, leaf-spine)")
    u.add_argument("--workers", type=int, default=None, help="number of workers")
    u.add_argument("--preset", default=None, help="homogeneous | heterogeneous")
    u.add_argument("--seed", type=int, default=None,
                   help="topology seed, as `inart plan --seed` (default 0)")
    u.add_argument("--name", default=NAME,
                   help=f"the lab's name, prefix of its namespaces and interfaces (default "
                        f"{NAME})")
    add_out(u, "lab", "inventory.yaml and the switches' logs")
    u.set_defaults(func=run_up)
    d = sub.add_parser("down", help="remove everything `lab up` made")
    d.add_argument("--name", default=NAME, help=f"the lab's name (default {NAME})")
    d.set_defaults(func=run_down)


def topology_field(args: argparse.Namespace) -> str | dict:
    """The inventory's ``topology``: the spec, with its options when any was given."""
    spec = args.topology
    if Path(spec).is_file():
        spec = str(Path(spec).resolve())
    opts = {k: getattr(args, k) for k in ("ps", "workers", "preset", "seed")
            if getattr(args, k) is not None}
    return {"spec": spec, **opts} if opts else spec


def run_up(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    try:
        topo = build_topology(args.topology, ps=args.ps, workers=args.workers,
                              preset=args.preset, seed=command_seed(args.seed or 0))
        field = topology_field(args)
        lab = up(topo, field, out / "logs", args.name)
    except ERRORS as exc:
        print(f"inart lab up: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, (TopologyError, ValueError)) else 1
    inventory = out / "inventory.yaml"
    try:
        inventory.write_text(f"# `inart lab up` made this lab ({args.name}); `inart lab down"
                             f"{'' if args.name == NAME else ' --name ' + args.name}` "
                             f"removes it\n" + yaml.safe_dump(lab.inventory(), sort_keys=False))
        load(inventory)  # what `inart run` will read
    except (OSError, InventoryError) as exc:
        down(args.name)
        print(f"inart lab up: error: {exc} (lab removed again)", file=sys.stderr)
        return 1
    print(f"lab '{args.name}' up: {topo.name}, {len(lab.netns)} namespace hosts, "
          f"{len(lab.grpc)} embedded switches")
    for line in lab.describe():
        print(f"  {line}")
    name = "" if args.name == NAME else f" --name {args.name}"
    sw, host = next(iter(lab.grpc)), next(iter(lab.netns))
    steps = [(f"inart run --inventory {inventory}", "plan, install, run a job"),
             (f"inart shell --address {lab.grpc[sw]} --device-id "
              f"{lab.addressing.device_id[sw]}", f"p4runtime-shell on {sw}"),
             (f"ip netns exec {lab.netns[host]} bash", f"a shell on {host}"),
             (f"inart lab down{name}", "remove the lab")]
    width = max(len(c) for c, _ in steps)
    print(f"wrote {inventory}\nnext:")
    for cmd, what in steps:
        print(f"  {cmd.ljust(width)}  # {what}")
    return 0


def run_down(args: argparse.Namespace) -> int:
    try:
        removed = down(args.name)
    except ERRORS as exc:
        print(f"inart lab down: error: {exc}", file=sys.stderr)
        return 1
    if not removed:
        print(f"lab '{args.name}': nothing to remove (no lab of that name is up)")
        return 0
    kinds = {k: sum(r.startswith(k + " ") for r in removed)
             for k in ("process", "interface", "netns")}
    print(f"lab '{args.name}' down: stopped {kinds['process']} switch processes, deleted "
          f"{kinds['interface']} interfaces and {kinds['netns']} namespaces")
    return 0
