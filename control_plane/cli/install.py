"""`inart install` / `inart uninstall`: a plan onto switches that are already running.

    inart install --plan plan.json --switch v1=127.0.0.1:9559 --switch v2=127.0.0.1:9560
    inart install --plan plan.json --switch ... --verify      # read back, exit 1 on a difference
    inart install --plan plan.json --dry-run [--json]          # entries per switch, no switch
    inart uninstall --plan plan.json --switch ...

    inart install --plan plan.json --target tofino --switch v1=10.0.0.5:9559 \
        --ports v1=ports-v1.yaml                 # Stratum (P4Runtime) on a Tofino
    inart install --plan plan.json --target tofino --bfrt --switch v1=10.0.0.5:50052 \
        --ports v1=ports-v1.yaml [--verify]      # bf_switchd's BF Runtime (needs the SDE)
    inart uninstall --plan plan.json --target tofino --bfrt --switch ... --ports ...

The entries come from control_plane/deploy (assign + compile_plan), so the switches' ports and
the hosts' addresses must be wired as the deploy layer's deterministic addressing says: port k
of a switch is its k-th neighbour in natural id order (`--dry-run` prints the mapping and every
host's address), and switch number i (natural order) is P4Runtime device i unless
``--switch NAME=ADDR,device=N`` says otherwise.  ``--topology`` (with the --ps/--seed that
`inart plan` got) checks that the real network has the plan's nodes and links.  All or
nothing across the switches; running it twice changes nothing
(control_plane/deploy/transaction.py says how).  Every run also writes its result as JSON
under --out (out/install/install.json, verify.json, dry-run.json; out/uninstall/...).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from control_plane.cli.args import (
    JSON_STDOUT,
    add_json,
    add_quiet,
    command,
    progress,
    write_json,
)
from control_plane.cli.plan import add_topology_args
from control_plane.deploy.addressing import Addressing, AddressingError, assign
from control_plane.deploy.entries import Compiled, EntriesError, compile_plan
from control_plane.deploy.pipeline import (
    TARGET_CONFIG,
    TNA_BUILD,
    Pipeline,
    PipelineError,
    pipeline_for,
)
from control_plane.deploy.portmap import remap_compiled
from control_plane.deploy.state import StateError
from control_plane.deploy.transaction import (
    DEFAULT_ELECTION_ID,
    DeployError,
    SwitchAddress,
    SwitchReport,
    install,
    parse_election_id,
    switch_addresses,
    uninstall,
    verify,
    verify_clean,
)
from control_plane.drivers.bfrt.client import DEFAULT_PUSH_TIMEOUT_S
from control_plane.drivers.p4runtime import P4RuntimeError
from control_plane.drivers.tofino.ports import PortsError, PortsFile, load_ports
from control_plane.model.plan import Plan, PlanError
from control_plane.model.topologies import build_topology, command_seed
from control_plane.model.topology import Topology, TopologyError, natural_key
from control_plane.repo import out_dir
from control_plane.report import format_table

INPUT_ERRORS = (PlanError, TopologyError, AddressingError, EntriesError, PipelineError,
                StateError, PortsError)


def _add_common(p: argparse.ArgumentParser, name: str) -> None:
    p.add_argument("--plan", required=True, help="an inart.plan/1 file (`inart plan --json`)")
    add_topology_args(p)  # --topology, and --ps/--seed/... as `inart plan` took them
    p.set_defaults(topology=None)  # default: the plan's own topology, nothing to check
    p.add_argument("--switch", action="append", default=[], metavar="NAME=HOST:PORT[,device=N]",
                   help="where switch NAME serves P4Runtime (repeat for every switch); device "
                        "defaults to the switch's number in natural id order (v1 -> 1)")
    p.add_argument("--target", default="embedded", choices=sorted(TARGET_CONFIG),
                   help="which pipeline config the switches take (default: %(default)s)")
    p.add_argument("--election-id", default=",".join(map(str, DEFAULT_ELECTION_ID)),
                   metavar="HIGH,LOW",
                   help="P4Runtime election id; a switch where another controller is primary "
                        "with a higher one is an error (default: %(default)s)")
    p.add_argument("--ports", action="append", default=[], metavar="NAME=FILE",
                   help="tofino: switch NAME's ports file (plan port -> dev port, speed, FEC; "
                        "docs/tofino.md); one per switch")
    p.add_argument("--timeout", type=float, default=15.0, help="seconds per P4Runtime call")
    add_json(p, "the result")
    add_quiet(p)
    p.add_argument("--out", type=Path, default=out_dir(name), metavar="DIR",
                   help=f"the result as JSON goes to OUT/{name}.json (verify.json with "
                        f"--verify, dry-run.json with --dry-run; default %(default)s)")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `inart install`."""
    p = command(subparsers, "install", "install a plan onto running P4 switches", __doc__)
    _add_common(p, "install")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true",
                      help="print every switch's entries, groups and port mapping; contact "
                           "no switch")
    mode.add_argument("--verify", action="store_true",
                      help="write nothing: read every switch back and report missing, extra "
                           "and different entries and groups (exit status 1 on a difference)")
    p.add_argument("--replace", action="store_true",
                   help="overwrite entries/groups that have the plan's keys but other contents "
                        "(default: refuse, writing nothing)")
    p.add_argument("--reset", action="store_true",
                   help="push the pipeline even where it is already ours: zeroes registers "
                        "and counters and removes every entry first")
    _add_bfrt(p, "pushes the program and brings the ports of --ports up; --verify reads "
                 "the entries back")
    p.add_argument("--push-timeout", type=float, default=DEFAULT_PUSH_TIMEOUT_S,
                   help="--bfrt: seconds the program push may take (bf_switchd answers when "
                        "the program's warm init has ended; the Tofino model takes far longer "
                        "than a switch; default: %(default)s)")
    p.set_defaults(func=run_install)


def _add_bfrt(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--bfrt", action="store_true",
                   help="tofino: talk BF Runtime to bf_switchd (port 50052, the SDE's "
                        f"bfrt_grpc) instead of P4Runtime; {what}")


def register_uninstall(subparsers: argparse._SubParsersAction) -> None:
    """Add `inart uninstall`."""
    p = subparsers.add_parser("uninstall", help="remove exactly a plan's entries from switches",
                              description="Remove a plan's entries and multicast groups (those "
                                          "present and equal to the plan's) from running "
                                          "switches; all or nothing.")
    _add_common(p, "uninstall")
    p.add_argument("--force", action="store_true",
                   help="also remove entries/groups with the plan's keys but other contents")
    _add_bfrt(p, "deletes the plan's entries, PRE groups and nodes (ports stay up)")
    p.set_defaults(func=run_uninstall)


# ---------------------------------------------------------------------------------------------
# inputs


def check_topology(plan: Topology, given: Topology, spec: str) -> None:
    """The plan's addressing is only right if the real network has its nodes and links."""
    problems = []
    for name, a, b in (("only in the plan", plan, given), (f"only in --topology {spec}", given,
                                                           plan)):
        nodes = sorted((n for n in a.nodes if n not in b.nodes
                        or a.nodes[n].kind != b.nodes[n].kind), key=natural_key)
        links = sorted("-".join(sorted(e, key=natural_key)) for e in a.graph.edges
                       if not b.graph.has_edge(*e))
        if nodes:
            problems.append(f"node(s) {name}: {', '.join(nodes[:8])}")
        if links:
            problems.append(f"link(s) {name}: {', '.join(links[:8])}")
    if problems:
        raise TopologyError(f"--topology {spec} does not match the plan's topology: "
                            + "; ".join(problems) + " (a generated topology needs the --ps, "
                            "--workers and --seed that `inart plan` got)")


def _load(args: argparse.Namespace) -> tuple[Plan, Addressing, Compiled, Pipeline]:
    try:
        plan = Plan.load(args.plan)
    except OSError as exc:
        raise PlanError(f"--plan {args.plan}: cannot read it ({exc.strerror})") from None
    if args.topology:
        real = build_topology(args.topology, ps=args.ps, workers=args.workers,
                              preset=args.preset, seed=command_seed(args.seed))
        check_topology(plan.topology, real, args.topology)
    addressing = assign(plan.topology)
    compiled = compile_plan(plan, addressing)
    if getattr(args, "bfrt", False):
        pass  # the BF Runtime driver maps ports itself (it can look front-panel names up)
    elif args.target == "tofino" and args.ports:
        compiled = remap_compiled(compiled, {sw: spec.dev_ports()
                                             for sw, spec in tofino_ports(args).items()})
    elif args.target == "tofino" and not getattr(args, "dry_run", False):
        raise PortsError("--target tofino needs --ports NAME=FILE for every switch (plan port "
                         "-> dev port; docs/tofino.md)")
    return plan, addressing, compiled, pipeline_for(args.target)


def tofino_ports(args: argparse.Namespace) -> dict[str, PortsFile]:
    """--ports NAME=FILE, parsed."""
    out = {}
    for text in args.ports:
        name, eq, path = text.partition("=")
        if not eq or not name or not path:
            raise PortsError(f"--ports {text!r}: expected NAME=FILE, e.g. v1=ports-v1.yaml")
        out[name] = load_ports(path)
    return out


def _bfrt_targets(args: argparse.Namespace, switches: dict[str, SwitchAddress]) -> list:
    """The switches with their ports files, for the BF Runtime driver."""
    from control_plane.drivers.bfrt.install import BfrtSwitch

    ports = tofino_ports(args)
    missing = [sw for sw in switches if sw not in ports]
    if missing:
        raise PortsError(f"--bfrt needs --ports for switch(es) {', '.join(missing)}")
    return [BfrtSwitch(sw.name, sw.address, ports[sw.name], sw.device_id)
            for sw in switches.values()]


def run_bfrt(args: argparse.Namespace, command: str, compiled: Compiled,
             switches: dict[str, SwitchAddress]) -> int:
    """`inart install|uninstall --target tofino --bfrt [--verify]`: the BF Runtime driver."""
    from control_plane.drivers.bfrt import readback
    from control_plane.drivers.bfrt.install import BfrtInstallError, install
    from control_plane.drivers.bfrt.sde import SdeError
    from control_plane.drivers.tofino.stratum import TofinoFiles

    if args.target != "tofino":
        return _fail(command, DeployError("--bfrt goes with --target tofino"), 2)
    try:
        targets = _bfrt_targets(args, switches)
    except PortsError as exc:
        return _fail(command, exc, 2)
    files = TofinoFiles.in_build(TNA_BUILD)
    started = time.perf_counter()
    try:
        if command == "uninstall":
            reports = readback.uninstall(compiled, targets, files, force=args.force,
                                         timeout=args.timeout)
            for r in reports:
                print(f"{r.switch.name}: program {r.program}, {r.deleted} entries deleted")
            record(args, "uninstall", {"command": "uninstall", "switches": {
                r.switch.name: {"program": r.program, "deleted": r.deleted} for r in reports}})
            print(f"uninstall: {sum(r.deleted for r in reports)} entries on {len(reports)} "
                  f"switch(es) in {time.perf_counter() - started:.2f} s")
            return 0
        if args.verify:
            return show_bfrt_verify(readback.verify(compiled, targets, files,
                                                    timeout=args.timeout))
        written = install(compiled, targets, files, timeout=args.timeout,
                          push_timeout=args.push_timeout)
    except (BfrtInstallError, SdeError, PortsError) as exc:
        return _fail(command, exc, 1)
    for t in targets:
        print(f"{t.name}: program pushed, {len(t.ports.ports)} port(s) up, "
              f"{written[t.name]} entries written")
    record(args, "install", {"command": "install", "switches": {
        t.name: {"ports_up": len(t.ports.ports), "written": written[t.name]} for t in targets}})
    print(f"install: {sum(written.values())} entries on {len(written)} switch(es) in "
          f"{time.perf_counter() - started:.2f} s")
    return 0


def show_bfrt_verify(reports: list, limit: int = 20) -> int:
    """Per switch: ok, or every missing / extra / different entry; status 1 on a difference."""
    for r in reports:
        head = f"{r.switch.name} ({r.switch.address}, device {r.switch.device_id}): program " \
               f"{r.program}"
        if r.clean:
            print(f"{head}; ok, {len(r.equal)} entries as planned")
            continue
        print(f"{head}; DIFFERS: {len(r.missing)} missing, {len(r.extra)} extra, "
              f"{len(r.different)} different, {len(r.equal)} as planned")
        lines = [f"  missing    {r.describe(te)}" for te in r.missing] + \
                [f"  extra      {r.describe(te)}" for te in r.extra] + \
                [f"  different  {r.describe(p)}" for p, _ in r.different]
        print("\n".join(lines[:limit]))
        if len(lines) > limit:
            print(f"  ... and {len(lines) - limit} more")
    bad = sum(1 for r in reports if not r.clean)
    print(f"verify: {'no difference' if not bad else f'{bad} of {len(reports)} switch(es) differ'}")
    return 1 if bad else 0


class _Bar:
    """A progress bar over a run's updates (stderr), fed by the deploy layer's events; made at
    the first write, when every switch's count is known, and not at all if nothing is written."""

    def __init__(self, desc: str, quiet: bool) -> None:
        self.desc, self.quiet, self.total = desc, quiet, 0
        self.bar: Any = None

    def __call__(self, switch: str, event: str, count: int) -> None:
        if event == "planned":
            self.total += count
        elif event == "written":
            if self.bar is None:
                self.bar = progress(total=self.total, desc=self.desc, unit="update",
                                    quiet=self.quiet)
            self.bar.set_postfix(switch=switch)
            self.bar.update(count)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def record(args: argparse.Namespace, name: str, doc: dict) -> None:
    """The result as JSON under --out (said on stderr with --json, whose stdout is the JSON)."""
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{name}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {path}", file=sys.stderr if args.json == JSON_STDOUT else sys.stdout)


def _fail(command: str, exc: Exception, status: int) -> int:
    print(f"inart {command}: error: {exc}", file=sys.stderr)
    return status


# ---------------------------------------------------------------------------------------------
# install, verify, dry run


def run_install(args: argparse.Namespace) -> int:
    try:
        plan, addressing, compiled, pipeline = _load(args)
        election_id = parse_election_id(args.election_id)
        switches = switch_addresses(args.switch, addressing, require_all=not args.dry_run)
    except (*INPUT_ERRORS, DeployError) as exc:
        return _fail("install", exc, 2)
    if args.dry_run:
        return dry_run(args, plan, addressing, compiled, switches)
    if args.bfrt:
        return run_bfrt(args, "install", compiled, switches)
    try:
        if args.verify:
            return show_verify(args, verify(compiled, switches, pipeline, args.timeout))
        started = time.perf_counter()
        bar = _Bar("install", args.json == JSON_STDOUT or args.quiet)
        try:
            reports = install(compiled, switches, pipeline, election_id, replace=args.replace,
                              reset=args.reset, timeout=args.timeout, progress=bar)
        finally:
            bar.close()
        show_reports(args, "install", reports, time.perf_counter() - started)
        return 0
    except (DeployError, P4RuntimeError, *INPUT_ERRORS) as exc:
        return _fail("install", exc, 1)


def run_uninstall(args: argparse.Namespace) -> int:
    try:
        _, addressing, compiled, pipeline = _load(args)
        election_id = parse_election_id(args.election_id)
        switches = switch_addresses(args.switch, addressing)
    except (*INPUT_ERRORS, DeployError) as exc:
        return _fail("uninstall", exc, 2)
    if args.bfrt:
        return run_bfrt(args, "uninstall", compiled, switches)
    try:
        started = time.perf_counter()
        bar = _Bar("uninstall", args.json == JSON_STDOUT or args.quiet)
        try:
            reports = uninstall(compiled, switches, pipeline, election_id, force=args.force,
                                timeout=args.timeout, progress=bar)
        finally:
            bar.close()
        show_reports(args, "uninstall", reports, time.perf_counter() - started)
        return 0
    except (DeployError, P4RuntimeError, *INPUT_ERRORS) as exc:
        return _fail("uninstall", exc, 1)


PIPELINE_TEXT = {"ours": "ours", "none": "had none", "other": "had another"}  # before a run
PIPELINE_NOW = {"ours": "ours", "none": "none", "other": "another program's"}


def show_reports(args: argparse.Namespace, command: str, reports: list[SwitchReport],
                 seconds: float) -> None:
    """One line per switch (or JSON): pipeline, updates written, items left alone."""
    doc = {"command": command, "seconds": round(seconds, 3),
           "switches": {r.switch.name: r.to_dict() for r in reports}}
    record(args, command, doc)
    if args.json:
        write_json(args.json, doc)
        return
    rows = []
    for r in reports:
        pipeline = PIPELINE_TEXT[r.pipeline] + (", pushed" if r.pushed else "")
        rows.append({"switch": r.switch.name, "address": r.switch.address,
                     "device": r.switch.device_id, "pipeline": pipeline,
                     "inserted": r.written.get("insert", 0),
                     "modified": r.written.get("modify", 0),
                     "deleted": r.written.get("delete", 0), "unchanged": r.unchanged,
                     "not in plan": r.extra})
    print(format_table(rows))
    total = sum(sum(r.written.values()) for r in reports)
    print(f"{command}: {total} update(s) on {len(reports)} switch(es) in {seconds:.2f} s")


def show_verify(args: argparse.Namespace, reports: list[SwitchReport], limit: int = 20) -> int:
    """Per switch: ok, or every missing / extra / different item (JSON with --json)."""
    clean = verify_clean(reports)
    doc = {"command": "verify", "clean": clean,
           "switches": {r.switch.name: r.to_dict() for r in reports}}
    record(args, "verify", doc)
    if args.json:
        write_json(args.json, doc)
        return 0 if clean else 1
    for r in reports:
        d = r.diff
        assert d is not None
        head = f"{r.switch.name} ({r.switch.address}, device {r.switch.device_id}): pipeline " \
               f"{PIPELINE_NOW[r.pipeline]}"
        if r.pipeline == "ours" and d.clean:
            print(f"{head}; ok, {len(d.equal)} entries and groups as planned")
            continue
        print(f"{head}; DIFFERS: {len(d.missing)} missing, {len(d.extra)} extra, "
              f"{len(d.different)} different, {len(d.equal)} as planned")
        lines = [f"  missing    {i.what}" for i in d.missing] + \
                [f"  extra      {i.what}" for i in d.extra] + \
                [f"  different  plan: {p.what}\n             switch: {s.what}"
                 for p, s in d.different]
        print("\n".join(lines[:limit]))
        if len(lines) > limit:
            print(f"  ... and {len(lines) - limit} more (--json lists all)")
    bad = sum(1 for r in reports if not (r.pipeline == "ours" and r.diff and r.diff.clean))
    print(f"verify: {'no difference' if clean else f'{bad} of {len(reports)} switch(es) differ'}")
    return 0 if clean else 1


def dry_run(args: argparse.Namespace, plan: Plan, addressing: Addressing, compiled: Compiled,
            switches: dict[str, SwitchAddress]) -> int:
    """The entries, groups and port mapping of every switch, and every host's address."""
    topo = plan.topology
    data: dict[str, Any] = {
        "plan": {"scheme": plan.scheme, "topology": topo.name, "job": plan.job},
        "ranks": compiled.ranks, "pool_size": compiled.pool_size,
        "result_addr": compiled.result_addr,
        "hosts": {h: {"ip": addressing.ip[h], "mac": addressing.mac[h],
                      "switch": addressing.tor[h],
                      "port": addressing.port[(addressing.tor[h], h)]}
                  for h in topo.workers + topo.pss},
        "switches": {},
    }
    for name, swe in compiled.switches.items():
        sw = switches.get(name)
        data["switches"][name] = {
            "device_id": sw.device_id if sw else addressing.device_id[name],
            "address": sw.address if sw else None,
            "mac": addressing.mac[name], "agg_addr": addressing.agg_addr[name],
            "ports": {str(p): nb for (s, nb), p in sorted(addressing.port.items(),
                                                          key=lambda kv: kv[1]) if s == name},
            "entries": [{"table": e.table, "match": dict(e.match), "action": e.action,
                         "params": dict(e.params), "why": e.why} for e in swe.entries],
            "groups": [{"group_id": g.group_id, "replicas": [list(r) for r in g.replicas],
                        "why": g.why} for g in swe.groups],
        }
    record(args, "dry-run", data)
    if args.json:
        write_json(args.json, data)
        return 0
    print(f"plan {plan.scheme} on {topo.name} (job {plan.job}): {len(compiled.switches)} "
          f"switch(es), {compiled.total()} entries and groups; pool size {compiled.pool_size}, "
          f"RESULT address {compiled.result_addr}")
    print("wiring: port k of a switch = its k-th neighbour in natural id order\n")
    for name, sw in data["switches"].items():
        where = sw["address"] or "(no --switch given)"
        ports = " ".join(f"{p}={nb}" for p, nb in sw["ports"].items())
        print(f"switch {name}: device {sw['device_id']}, {where}, mac {sw['mac']}, "
              f"aggregation address {sw['agg_addr']}\n  ports: {ports}")
        rows = [{"table": e["table"].split(".")[-1],
                 "match": " ".join(f"{k}={v}" for k, v in e["match"].items()),
                 "action": e["action"].split(".")[-1],
                 "params": " ".join(f"{k}={v}" for k, v in e["params"].items()),
                 "why": e["why"]} for e in sw["entries"]]
        rows += [{"table": "multicast group", "match": f"id={g['group_id']}", "action": "-",
                  "params": " ".join(f"port{p}/rid{r}" for p, r in g["replicas"]),
                  "why": g["why"]} for g in sw["groups"]]
        print("  " + format_table(rows).replace("\n", "\n  ") + "\n")
    print("hosts (configure the real ones with these addresses; no ARP through the switches):")
    print("  " + format_table([{"host": h, "rank": compiled.ranks.get(h, "-"), **v}
                               for h, v in data["hosts"].items()]).replace("\n", "\n  "))
    print()
    print(compiled.summary_table())
    return 0
