"""`inart ctl`: the controller service's API on the command line (client: service/client.py).

    inart ctl topology fig1 [--switch v1=127.0.0.1:9559 ...]    register (default addresses:
                                                                the running emulation's)
    inart ctl topology                                          show
    inart ctl submit [--workers w1,w2] [--pss s1] --model-size 1e6
    inart ctl plan JOB [--version N] [--save plan.json]
    inart ctl event link-down v1 v2 | link-up A B | link-load A B LOAD | ps-load S LOAD
                    | switch-down V | switch-up V
    inart ctl watch [--job J] [--since SEQ] [--count N] [--timeout S]
    inart ctl jobs [--all] | cancel JOB | reconcile | progress JOB HOST ROUND

Every command takes --json (machine-readable output: the API's messages as JSON) and
--timeout (seconds: how long to wait for the reply; watch: how long to watch).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import grpc

from control_plane.cli.args import RunFailed, add_json, deprecate, write_json, write_json_line
from control_plane.model.topologies import build_topology
from control_plane.model.topology import Topology, TopologyError
from control_plane.repo import EMULATION_STATE
from control_plane.service.auth import AuthConfigError, is_loopback, read_token, split_address
from control_plane.service.client import DEFAULT_ADDRESS, EVENT_KINDS, Client, to_dict
from control_plane.service.proto import inart_controller_pb2 as pb

REQUEST_TIMEOUT = 120.0  # seconds a command waits for its reply unless --timeout says


class UsageError(ValueError):
    """Options that cannot work together; the message says which and why."""


def _short(enum: object, value: int, prefix: str) -> str:
    return enum.Name(value).removeprefix(prefix).lower()  # type: ignore[attr-defined]


def job_line(job: pb.Job) -> str:
    state = _short(pb.JobState, job.state, "JOB_STATE_")
    line = (f"job {job.id} {state}: {len(job.workers)} workers, {len(job.pss)} PSs, "
            f"model {job.model_size:g}, {job.scheme}, version {job.active_version}")
    if job.draining_version:
        line += f" (version {job.draining_version} draining)"
    return line + (f" - {job.message}" if job.message else "")


def version_line(v: pb.PlanVersion) -> str:
    state = _short(pb.VersionState, v.state, "VERSION_STATE_")
    return (f"job {v.job_id} version {v.version} {state}: bank {v.bank}, wire job {v.wire_job}, "
            f"rate {v.rate:.6g}, from round {v.switch_round}, phase {v.phase} "
            f"({v.reason})")


def watch_line(ev: pb.WatchEvent) -> str:
    what = ev.WhichOneof("what")
    stamp = time.strftime("%H:%M:%S", time.localtime(ev.time))
    body = getattr(ev, what)
    if what == "version":
        text = version_line(body)
    elif what == "job":
        text = job_line(body)
    elif what == "install":
        text = (f"job {body.job_id} version {body.version} {body.step}: {body.done}/"
                f"{body.total} switches, {body.updates} updates")
    elif what == "event":
        where = f"{body.link.a} <-> {body.link.b}" if body.link.a else body.node
        text = (f"event {body.id} {_short(pb.EventKind, body.kind, 'EVENT_KIND_')} {where}"
                + (f" {body.value:g}" if body.value else ""))
    elif what == "error":
        text = f"error (job {body.job_id}): {body.message}"
    else:
        changed = [s.name for s in body.switches if s.inserted or s.modified or s.deleted
                   or s.pipeline_pushed]
        text = f"reconcile repaired {', '.join(changed)}"
    return f"[{ev.seq}] {stamp} {text}"


def topology_lines(state: pb.TopologyState) -> list[str]:
    if not state.topology_json:
        return ["no topology registered"]
    topo = json.loads(state.topology_json)
    kinds: dict[str, int] = {}
    for node in topo["nodes"]:
        kinds[node["kind"]] = kinds.get(node["kind"], 0) + 1
    lines = [f"topology {topo.get('name', '?')}: " + ", ".join(f"{k} {n}" for k, n in
                                                              sorted(kinds.items()))
             + f"; {state.events} events applied"]
    for sw in state.switches:
        status = "lost" if sw.lost else ("ok" if sw.reachable else "unreachable")
        lines.append(f"  {sw.name:8s} {sw.address:22s} device {sw.device_id:<4d} {status:12s}"
                     f" {sw.entries} entries" + (f"  {sw.error}" if sw.error else ""))
    if state.down_links:
        lines.append("  links down: " + ", ".join(f"{lk.a}-{lk.b}" for lk in state.down_links))
    return lines


def parse_switch(text: str) -> tuple[str, str | tuple[str, int]]:
    name, eq, rest = text.partition("=")
    address, _, option = rest.partition(",")
    if not eq or not name or not address:
        raise argparse.ArgumentTypeError(f"--switch {text!r}: expected NAME=HOST:PORT[,device=N]")
    if not option:
        return name, address
    key, _, value = option.partition("=")
    if key != "device" or not value.isdigit():
        raise argparse.ArgumentTypeError(f"--switch {text!r}: expected ',device=N' after the "
                                         f"address")
    return name, (address, int(value))


# -- commands: each returns (message for --json, lines for people) ---------------------------


def cmd_topology(c: Client, args: argparse.Namespace) -> tuple[object, list[str]]:
    if args.spec is None:
        state = c.topology()
    else:
        topo = build_topology(args.spec)
        switches = dict(args.switch)
        if not switches:
            switches = emulation_switches(topo)
        missing = [sw for sw in topo.switches if sw not in switches]
        if missing:
            raise UsageError(f"topology {args.spec}: no P4Runtime address for switch(es) "
                             f"{', '.join(missing[:8])}: give --switch NAME=HOST:PORT for each")
        for sw, where in switches.items():
            address = where if isinstance(where, str) else where[0]
            if _same_endpoint(address, args.address):
                raise UsageError(f"switch {sw}: {address} is the service's own address "
                                 f"(--address): a switch must listen elsewhere")
        state = c.register_topology(topo, switches)
    return state, topology_lines(state)


def _same_endpoint(a: str, b: str) -> bool:
    """Whether two HOST:PORT addresses are one endpoint of this machine's loopback (or the
    same text)."""
    if a == b:
        return True
    try:
        (host_a, port_a), (host_b, port_b) = split_address(a), split_address(b)
    except AuthConfigError:
        return False
    return port_a == port_b and (host_a == host_b
                                 or (is_loopback(host_a) and is_loopback(host_b)))


def emulation_switches(topo: Topology, state: Path = EMULATION_STATE
                       ) -> dict[str, tuple[str, int]]:
    """Every switch of ``topo`` where the running emulation put it (its state file); a
    TopologyError saying what to give instead when none runs or its switches differ."""
    try:
        running = json.loads(state.read_text())["switches"]
    except (OSError, ValueError, KeyError, TypeError):
        raise TopologyError(f"topology {topo.name}: no --switch given and no running emulation "
                            f"({state} missing or unreadable): give --switch NAME=HOST:PORT "
                            f"for every switch") from None
    missing = [sw for sw in topo.switches if sw not in running]
    if missing:
        raise TopologyError(f"topology {topo.name}: switch(es) {', '.join(missing)} are not in "
                            f"the running emulation ({state}: {', '.join(running)}): give "
                            f"--switch NAME=HOST:PORT for them")
    return {sw: (running[sw]["grpc"], int(running[sw]["device_id"])) for sw in topo.switches}


def cmd_submit(c: Client, args: argparse.Namespace) -> tuple[object, list[str]]:
    job = c.submit(args.workers, args.pss, args.model_size, args.scheme, args.seed, args.name)
    return job, [job_line(job)]


def cmd_plan(c: Client, args: argparse.Namespace) -> tuple[object, list[str]]:
    v = c.plan(args.job, args.version)
    lines = [version_line(v)]
    plan = json.loads(v.plan_json)
    for f in plan["flows"]:
        at = f"aggregated at {f['aggregate_at']}" if f["aggregate_at"] else "direct"
        lines.append(f"  {f['worker']:>5s} -> {f['ps']:<5s} {at:18s} {' '.join(f['path'])}")
    if args.save:
        Path(args.save).write_text(json.dumps(plan, indent=1) + "\n")
        lines.append(f"plan written to {args.save}")
    return v, lines


def cmd_event(c: Client, args: argparse.Namespace) -> tuple[object, list[str]]:
    kind, rest = args.kind, list(args.args)
    link_event = kind.startswith("link-")
    wants = (2 if link_event else 1) + (1 if kind.endswith("-load") else 0)
    if len(rest) != wants:
        usage = ("A B" if link_event else "NODE") + (" LOAD" if kind.endswith("-load") else "")
        raise SystemExit(f"inart ctl event {kind}: expected {usage}")
    value = 0.0
    if kind.endswith("-load"):
        try:
            value = float(rest.pop())
        except ValueError:
            raise SystemExit(f"inart ctl event {kind}: LOAD must be a number") from None
    link = (rest[0], rest[1]) if link_event else None
    reply = c.event(kind, link=link, node="" if link_event else rest[0], value=value)
    lines = [f"event {reply.event_id} applied in {reply.seconds:.3f} s"]
    for r in reply.replans:
        outcome = _short(pb.ReplanOutcome, r.outcome, "REPLAN_OUTCOME_")
        lines.append(f"  job {r.job_id}: {outcome} - {r.message}")
    return reply, lines


def cmd_watch(c: Client, args: argparse.Namespace) -> tuple[object, list[str]]:
    """Print messages until --count of them came or --timeout passed (whether or not any
    message comes: it is the stream's gRPC deadline)."""
    stream = c.watch(args.job, args.since, args.timeout)
    seen = 0
    try:
        for ev in stream:
            if args.json:
                write_json_line(args.json, to_dict(ev))
            else:
                print(watch_line(ev), flush=True)
            seen += 1
            if args.count and seen >= args.count:
                break
    except grpc.RpcError as exc:
        if exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
            raise
    finally:
        stream.cancel()
    return None, []


def cmd_jobs(c: Client, args: argparse.Namespace) -> tuple[object, list[str]]:
    jobs = c.jobs(args.all)
    return pb.ListJobsResponse(jobs=jobs), [job_line(j) for j in jobs] or ["no jobs"]


def cmd_cancel(c: Client, args: argparse.Namespace) -> tuple[object, list[str]]:
    job = c.cancel(args.job)
    return job, [job_line(job)]


def cmd_reconcile(c: Client, args: argparse.Namespace) -> tuple[object, list[str]]:
    r = c.reconcile()
    lines = [f"reconciled {len(r.switches)} switches in {r.seconds:.3f} s"]
    for s in r.switches:
        lines.append(f"  {s.name:8s} {'ok' if s.reachable else 'unreachable':12s} +{s.inserted}"
                     f" ~{s.modified} -{s.deleted}" + (" (pipeline pushed)"
                                                       if s.pipeline_pushed else "")
                     + (f"  {s.error}" if s.error else ""))
    return r, lines


def cmd_progress(c: Client, args: argparse.Namespace) -> tuple[object, list[str]]:
    v = c.progress(args.job, args.participant, args.round)
    return v, [f"round {args.round}: " + version_line(v)]


COMMANDS: dict[str, Callable[[Client, argparse.Namespace], tuple[object, list[str]]]] = {
    "topology": cmd_topology, "submit": cmd_submit, "plan": cmd_plan, "event": cmd_event,
    "watch": cmd_watch, "jobs": cmd_jobs, "cancel": cmd_cancel, "reconcile": cmd_reconcile,
    "progress": cmd_progress,
}


def unavailable(args: argparse.Namespace, details: str) -> str:
    """Why no service answered, in the user's terms rather than gRPC's."""
    head = f"no `inart serve` answers at {args.address}"
    if "refused" in details or "resolution" in details or "No address" in details:
        return (f"{head}: nothing listens there (start `inart serve --listen "
                f"{args.address}`, or give --address HOST:PORT of the one running)")
    if args.tls_ca is None:
        return (f"{head}: the connection failed (a service off localhost speaks TLS: give "
                f"--tls-ca; else check --address)")
    return f"{head}: the connection failed (check --address and --tls-ca)"


def run(args: argparse.Namespace) -> int:
    timeout = REQUEST_TIMEOUT if args.timeout is None else args.timeout
    try:
        token = read_token(args.token_file) if args.token_file else None
        client = Client(args.address, token, args.tls_ca, timeout)
    except AuthConfigError as exc:
        print(f"inart ctl: error: {exc}", file=sys.stderr)
        return 2
    with client:
        try:
            message, lines = COMMANDS[args.ctl](client, args)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                raise RunFailed(unavailable(args, exc.details() or "")) from exc
            print(f"inart ctl: error: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 1
        except (TopologyError, UsageError) as exc:
            print(f"inart ctl: error: {exc}", file=sys.stderr)
            return 2
    if args.json and message is not None:
        write_json(args.json, to_dict(message))
    elif not args.json and lines:
        print("\n".join(lines))
    return 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of seconds > 0")
    return value


def _csv(text: str) -> list[str]:
    return [t for t in text.split(",") if t]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ctl", help="talk to a running `inart serve` (gRPC API)",
                       description=__doc__.split("\n\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--address", default=DEFAULT_ADDRESS, metavar="HOST:PORT",
                        help="where `inart serve` listens (default %(default)s)")
    common.add_argument("--token-file", help="bearer token for a service off localhost")
    common.add_argument("--tls-ca", help="PEM CA certificate: talk TLS")
    common.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                        help=f"how long to wait for the reply (default {REQUEST_TIMEOUT:g}); "
                             f"watch: stop after this long, messages or not (default: never)")
    add_json(common, "the reply")
    deprecate(common, "--server", "--address")
    cmds = p.add_subparsers(dest="ctl", metavar="COMMAND", required=True)

    t = cmds.add_parser("topology", parents=[common], help="register a topology, or show it")
    t.add_argument("spec", nargs="?", help="fig1 | fattree:K | leafspine:L,S,H | FILE")
    t.add_argument("--switch", action="append", type=parse_switch, default=[],
                   metavar="NAME=HOST:PORT[,device=N]", help="a switch's P4Runtime address")
    s = cmds.add_parser("submit", parents=[common], help="submit a training job")
    s.add_argument("--workers", type=_csv, default=[], help="w1,w2,... (default: all)")
    s.add_argument("--pss", type=_csv, default=[], help="s1,... (default: all)")
    s.add_argument("--model-size", type=float, required=True, help="parameters of the model")
    s.add_argument("-s", "--scheme", default="inart", metavar="SCHEME",
                   help="the job's planning scheme (default %(default)s)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--name", default="")
    pl = cmds.add_parser("plan", parents=[common], help="a job's plan version")
    pl.add_argument("job", type=int)
    pl.add_argument("--version", type=int, default=0, help="default: the active one")
    pl.add_argument("--save", metavar="FILE",
                    help="write the plan (inart.plan/1, what `inart install --plan` takes) to FILE")
    deprecate(pl, "--out", "--save")
    e = cmds.add_parser("event", parents=[common], help="report a network event")
    e.add_argument("kind", choices=sorted(EVENT_KINDS))
    e.add_argument("args", nargs="*", metavar="ARG", help="A B [LOAD] | NODE [LOAD]")
    w = cmds.add_parser("watch", parents=[common], help="stream versions, progress, errors")
    w.add_argument("--job", type=int, default=0, help="one job (default: all)")
    w.add_argument("--since", type=int, default=0, help="replay kept messages after this seq")
    w.add_argument("--count", type=int, default=0, help="stop after N messages")
    j = cmds.add_parser("jobs", parents=[common], help="list jobs")
    j.add_argument("--all", action="store_true", help="cancelled ones too")
    c = cmds.add_parser("cancel", parents=[common], help="cancel a job (removes its entries)")
    c.add_argument("job", type=int)
    cmds.add_parser("reconcile", parents=[common], help="read back and repair every switch now")
    pr = cmds.add_parser("progress", parents=[common],
                         help="report a host's round; prints the version to use")
    pr.add_argument("job", type=int)
    pr.add_argument("participant")
    pr.add_argument("round", type=int)
    p.set_defaults(func=run)
