"""`inart experiment head-to-head`: INA vs ring vs topology-aware tree vs RSGCM on one network.

Every scheme trains the same model on the same data with the same batch, learning rate and
seed, on the same emulated network of P4 switches, one after the other:
- INA with the InArt, ATP and LBMM plans (LBMM aggregates nowhere: the multi-PS baseline
  without in-network aggregation), paced to the plan's rate, the optimizer on the PSs;
- ring all-reduce, RAT topology-aware trees and RSGCM rings (host_stack/collectives) over
  gloo, whose TCP connections cross the same switches and shaped links (the switches route
  them by destination: the host routes every installed plan carries);
- selective reduce (Alg. 3): its coordinator runs as a process on the first PS host (idle
  otherwise) with the job's store; workers report ready there and average their models in
  the groups it forms (gloo rings over the emulated links); link bandwidths for its Eq. 2
  are the topology's worker links at ``--scale``.  Its workers' models differ by design.
Per scheme and seed: time per iteration split into compute and communication (the slowest
worker of each round), the loss, the test accuracy every ``--eval-every`` rounds against the
cumulative iteration time (time-to-accuracy; evaluation time is left out), the bytes each
worker put on its link beside what the scheme says it sent (the INA frames; for the
collectives gloo's messages in TCP segments plus one ACK per two segments received, so what
is left over is gloo's rendezvous and store and any extra ACKs), the bytes into the PSs and
over all links (selective: its group all-reduces; the store's control messages and each
group's connection set-up are left over).  Not here: `--sync torch` is gloo's own ring, the
same traffic as `ring` on this network.
INA senders are paced by the kernel (``--pacing kernel``, emulation/network/host_pacing.py), as the
collectives' TCP is; every run gets a fidelity verdict (emulation/measure/fidelity.py), and the
ranking by time per iteration is printed only when no run was bounded by the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from control_plane.cli.args import add_scheme, add_topology, deprecate
from control_plane.cli.args import progress as progress_bar
from control_plane.deploy.addressing import Addressing
from control_plane.deploy.entries import compile_plan
from control_plane.model.plan import Plan
from control_plane.model.topologies import build_topology
from control_plane.report import format_table, to_csv
from control_plane.solver.solve import plan_for
from emulation.cli.emulate import add_isolation_arg, add_pace_arg, add_pacing_arg
from emulation.cluster.spec import CLUSTER_HELP
from emulation.cluster.spec import argument as cluster_argument
from emulation.measure.fidelity import Verdict, ranking_lines
from emulation.measure.metrics import all_sending_rate, directed_link_bytes
from emulation.network.link_impair import add_arguments as add_impair_arguments
from emulation.network.link_impair import frames_since
from emulation.network.link_impair import from_args as impairment
from emulation.runs.emulate import Emulation
from host_stack.cli.experiment import add_common_args
from host_stack.experiments.selective.selective_sync import STORE_ENV
from host_stack.train.hostrun import JobResult, JobSource, TrafficConfig, plan_files, run_hosts
from host_stack.train.jobargs import MODEL_NAMES

INA = ("inart", "r-inart", "atp", "lbmm")  # r-inart: equal split + R-InArt, the paper's baseline
COLLECTIVES = ("ring", "tree", "rsgcm")
SELECTIVE = "selective"
KNOWN = (*INA, *COLLECTIVES, SELECTIVE)
SCHEMES = ("inart", "atp", "lbmm", *COLLECTIVES, SELECTIVE)  # the default comparison
# torch.distributed's rendezvous and the selective coordinator's store listen on a worker's or
# PS's address inside the emulation's own host namespaces, where nothing else runs: fixed
# ports cannot collide there (loopback runs, `inart train`, take free ports instead)
DIST_PORT = 29500
STORE_PORT = 29600


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_training_args(parser, "head-to-head", SCHEMES,
                      "fig1, 6 rounds, every scheme (what the tests run)")
    add_impair_arguments(parser)
    parser.add_argument("--cluster", metavar="SERVERS_YAML", type=cluster_argument,
                        default=None, help=CLUSTER_HELP)
    parser.set_defaults(func=run)


def add_training_args(parser: argparse.ArgumentParser, name: str, schemes: tuple[str, ...],
                      quick_help: str) -> None:
    """The options of a training comparison on one emulated network (also the testbed's)."""
    add_common_args(parser, name, 1, "seeds, one repetition each (data order, "
                    "initial weights, solver)", quick_help)
    add_topology(parser)
    add_scheme(parser, KNOWN, ",".join(schemes))
    deprecate(parser, "--schemes", "--scheme")
    parser.add_argument("--model", default="mlp", choices=MODEL_NAMES,
                        help="the model whose gradients flow (default mlp)")
    parser.add_argument("--rounds", type=int, default=60, help="iterations per run")
    parser.add_argument("--batch", type=int, default=32, help="minibatch per worker")
    parser.add_argument("--eval-every", type=int, default=5, help="test accuracy every K rounds")
    parser.add_argument("--target-accuracy", type=float, default=0.85,
                        help="the accuracy time-to-accuracy is measured to")
    parser.add_argument("--scale", type=float, default=0.25,
                        help="Mbit/s per topology unit (link shaping and INA pacing)")
    parser.add_argument("--deadline", type=float, default=900.0, help="seconds per run")
    add_pace_arg(parser)
    add_pacing_arg(parser)
    add_isolation_arg(parser)
    parser.add_argument("--group-p", type=int, default=None, metavar="P",
                        help="selective: smallest group size (default 0.3 x workers, >= 2)")


def collective_job(addr: Addressing, plan: Plan, workdir: Path, sync: str,
                   rendezvous: tuple[str, str] | None = None) -> JobSource:
    """The workers alone, ``--sync sync``; ``rendezvous`` (variable, URL) says where they meet,
    by default gloo's on rank 0's host; each worker's gloo sockets use its emulated
    interface."""
    files = plan_files(addr, plan, compile_plan(plan, addr), workdir)
    workers = plan.topology.workers
    var, url = rendezvous or ("INART_DIST_INIT", f"tcp://{addr.ip[workers[0]]}:{DIST_PORT}")
    env = {w: {var: url, "GLOO_SOCKET_IFNAME": f"{w}-eth0"} for w in workers}
    return JobSource(files.argv, [], workers, [], files.ranks, sync, ("--sync", sync), env)


def group_p(workers: int, given: int | None) -> int:
    """Selective reduce's smallest group: ``--group-p`` or 0.3 x workers, at least 2."""
    p = given if given is not None else max(2, round(0.3 * workers))
    if not 1 <= p <= workers:
        raise SystemExit(f"--group-p {p}: expected 1..{workers} (the workers)")
    return p


class Coordinator:
    """Selective reduce's coordinator process on an emulated host, for one run."""

    def __init__(self, emu: Emulation, source: JobSource, p: int, cfg: TrafficConfig,
                 workdir: Path) -> None:
        topo, host, tor = emu.topo, emu.topo.pss[0], emu.addr.tor
        bandwidths = [topo.links[(w, tor[w])].capacity * (cfg.unit_bps or 0) / 8
                      for w in sorted(source.ranks, key=source.ranks.__getitem__)]
        self.stderr = workdir / "coordinator.stderr"
        with open(self.stderr, "w") as err:
            self.proc = emu.net.popen(host, [
                sys.executable, "-m", "host_stack.experiments.selective.coordinator",
                "--listen", f"{emu.addr.ip[host]}:{STORE_PORT}", "--world", str(len(topo.workers)),
                "--p", str(p), "--model", cfg.model, "--seed", str(cfg.seed),
                "--bandwidths", ",".join(f"{b:.6g}" for b in bandwidths),
                "--timeout", str(cfg.deadline_s)], stdout=subprocess.PIPE, stderr=err, text=True)
        if json.loads(self.proc.stdout.readline() or "{}").get("event") != "ready":
            self.stop()
            raise RuntimeError(f"selective coordinator did not start: {self.tail()}")

    @staticmethod
    def url(emu: Emulation) -> str:
        """Where the workers find its store: the first PS host."""
        return f"tcp://{emu.addr.ip[emu.topo.pss[0]]}:{STORE_PORT}"

    def tail(self) -> str:
        return self.stderr.read_text(errors="replace")[-2000:]

    def result(self) -> dict[str, Any]:
        """The groups it formed (once every worker is done, it exits)."""
        out, _ = self.proc.communicate(timeout=60)
        if self.proc.returncode != 0:
            raise RuntimeError(f"selective coordinator failed: {self.tail()}")
        return json.loads(out.strip().splitlines()[-1])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def per_round(job: JobResult) -> list[dict[str, float]]:
    """Every round's compute and communication time (the slowest worker's), mean loss and
    the accuracy where it was evaluated (equal on every worker: they hold equal parameters)."""
    records = list(job.rounds.values())
    out = []
    for r in range(min(len(recs) for recs in records)):
        recs = [recs[r] for recs in records]
        slowest = max(recs, key=lambda x: x["compute_s"] + x["sync_s"])
        row = {"round": r, "compute_s": slowest["compute_s"], "comm_s": slowest["sync_s"],
               "loss": statistics.fmean(x["loss"] for x in recs)}
        if all("sync_at" in x for x in recs):
            row["exchange_s"] = exchange_s(recs)
        accs = [x["accuracy"] for x in recs if "accuracy" in x]
        if accs:
            row["accuracy"] = statistics.fmean(accs)
        out.append(row)
    return out


def exchange_s(recs: list[dict[str, float]]) -> float:
    """One round's exchange alone: from the last worker's start of its sync to the last
    worker's end.  ``comm_s`` (the slowest worker's sync) also holds its wait for the others'
    compute, which no network model has."""
    return (max(x["sync_at"] + x["sync_s"] for x in recs)
            - max(x["sync_at"] for x in recs))


def curve(rounds: list[dict[str, float]]) -> list[tuple[float, float]]:
    """(cumulative iteration time, accuracy) at every evaluated round."""
    t, out = 0.0, []
    for r in rounds:
        t += r["compute_s"] + r["comm_s"]
        if "accuracy" in r:
            out.append((t, r["accuracy"]))
    return out


def worker_rate_mbps(job: JobResult) -> float:
    """Median over rounds after the first of the workers' mean sending rate: the bytes each
    sent in a round over its time in that round's communication."""
    per_round_rates = [
        statistics.fmean(recs[r].get("bytes", 0) * 8 / recs[r]["sync_s"] / 1e6
                         for recs in job.rounds.values() if recs[r]["sync_s"] > 0)
        for r in range(1, min(len(recs) for recs in job.rounds.values()))]
    return statistics.median(per_round_rates) if per_round_rates else float("nan")


def summarize(scheme: str, seed: int, job: JobResult, worker_up: int, expected: int,
              ps_in: int, links: int, target: float, batch: int) -> dict[str, Any]:
    rounds = per_round(job)
    steady = rounds[1:] or rounds  # round 0 includes connection set-up (HELLO, gloo)
    points = curve(rounds)
    reached = next((t for t, acc in points if acc >= target), None)
    done = list(job.done.values())
    iter_s = statistics.median(r["compute_s"] + r["comm_s"] for r in steady)
    return {
        "scheme": scheme, "seed": seed, "rounds": len(rounds),
        "compute_s": statistics.median(r["compute_s"] for r in steady),
        "comm_s": statistics.median(r["comm_s"] for r in steady),
        "iter_s": iter_s,
        # from the last worker's start to the last end (None: a worker did not report starts)
        "exchange_s": statistics.median(r["exchange_s"] for r in steady)
        if all("exchange_s" in r for r in steady) else None,
        "train_s": sum(r["compute_s"] + r["comm_s"] for r in rounds),
        "images_per_s": len(job.rounds) * batch / iter_s if iter_s > 0 else float("nan"),
        "rate_mbps": worker_rate_mbps(job),
        "rate_all_sending_mbps": all_sending_rate(list(job.rounds.values())),
        "final_loss": rounds[-1]["loss"] if rounds else float("nan"),
        "accuracy": statistics.fmean(d["accuracy"] for d in done),
        "time_to_target_s": reached,
        "workers_agree": len({d["params_sha256"] for d in done}) == 1,
        "params_sha256": done[0]["params_sha256"],
        "worker_bytes": worker_up, "expected_bytes": expected,
        "bytes_ratio": worker_up / expected if expected else float("nan"),
        "ps_ingress_bytes": ps_in, "link_bytes": links,
        # INA's resends (UDP; the collectives' TCP ones are counted from the kernel)
        "ina_retx": sum(d.get("counters", {}).get("retx_sent", 0) for d in done),
        "ina_retx_spurious": sum(d.get("counters", {}).get("retx_spurious", 0) for d in done),
        "ina_retx_by": {k: sum(d.get("counters", {}).get(f"retx_{k}", 0) for d in done)
                        for k in ("fast", "probe", "timeout")},
        "curve": points, "per_round": rounds,
    }


def one_run(emu: Emulation, scheme: str, seed: int, cfg: TrafficConfig, out: Path,
            target: float, eval_every: int, p: int | None = None) -> dict[str, Any]:
    """Install (INA) or reuse the routes (the others), train, measure the links."""
    topo, addr = emu.topo, emu.addr
    workdir = out / "hosts" / f"{scheme}-seed{seed}"
    workdir.mkdir(parents=True, exist_ok=True)
    if scheme in INA:
        plan = plan_for(topo, scheme, seed)
        source = plan_files(addr, plan, emu.install(plan), workdir)
    else:
        plan = plan_for(topo, "lbmm", seed)  # its worker ids, ranks and topology only
        if emu.installed is None:  # the host routes come with any plan's entries
            emu.install(plan)
        store = (STORE_ENV, Coordinator.url(emu)) if scheme == SELECTIVE else None
        source = collective_job(addr, plan, workdir, scheme, store)
    facing = {h: f"{addr.tor[h]}-eth{addr.port[(addr.tor[h], h)]}"
              for h in topo.workers + topo.pss}
    source = replace(source, worker_argv=(*source.worker_argv, "--eval-every", str(eval_every)))
    cfg = emu.paced_config(plan if scheme in INA else None, cfg)
    before = emu.net.interface_bytes()
    retx_before = emu.net.tcp_retransmits(topo.workers)
    impaired_before = emu.net.impairment_counts()
    emu.monitor.mark()
    coordinator = (Coordinator(emu, source, group_p(len(topo.workers), p), cfg, workdir)
                   if scheme == SELECTIVE else None)
    try:
        job = run_hosts(emu.net, source, cfg, workdir, quiet=True)
        groups = coordinator.result() if coordinator is not None else None
    finally:
        if coordinator is not None:
            coordinator.stop()
    usage = emu.monitor.usage()
    after = emu.net.interface_bytes()
    tcp_retx = emu.net.tcp_retransmits(topo.workers) - retx_before
    worker_up = sum(after[facing[w]][1] - before[facing[w]][1] for w in topo.workers)
    ps_in = sum(after[facing[s]][0] - before[facing[s]][0] for s in topo.pss)
    # what each scheme says its frames were (the collectives: gloo's messages in TCP segments
    # and the ACKs for what they received, host_stack/collectives/p2p.py)
    expected = sum(r.get("wire_bytes", 0) for recs in job.rounds.values() for r in recs)
    per_link = directed_link_bytes(addr.port, before, after)
    row = summarize(scheme, seed, job, worker_up, expected, ps_in, sum(per_link.values()),
                    target, cfg.batch)
    if emu.net.cluster is not None and len(emu.net.cluster.servers_used()) > 1:
        row["exchange_s"] = None  # each server has its own monotonic clock
    row["plan_rate_units"] = plan.rate if scheme in INA else None
    row["groups"] = groups
    row["tcp_retx"] = tcp_retx
    row.update(frames_since(impaired_before, emu.net.impairment_counts()))
    row["bytes_per_link"] = per_link
    paced = (plan.rate * cfg.rate_factor * cfg.unit_bps / 1e6
             if scheme in INA and cfg.unit_bps and plan.rate > 0 else None)
    # judged once every worker sends (emulation/measure/metrics.py); the mean waits for peers'
    # compute
    all_sending = row["rate_all_sending_mbps"]
    row["sent_over_plan"] = ((all_sending if all_sending is not None else row["rate_mbps"])
                             / paced if paced else None)
    row["sent_over_plan_mean"] = row["rate_mbps"] / paced if paced else None
    row.update(emu.pacing_note(cfg, job) if scheme in INA else {"pacing": "tcp"})
    row["cpu_isolation"] = emu.isolation_note
    verdict = emu.verdict(scheme, row["sent_over_plan"],
                          row["ina_retx"] if scheme in INA else tcp_retx, usage)
    row.update(verdict.fields())
    return row


def run(args: argparse.Namespace) -> int:
    if args.quick:
        args.topology, args.rounds, args.eval_every = "fig1", 6, 3
    schemes = args.scheme
    rows = train_all(args, schemes, "head-to-head")
    write(rows, args.out, args)
    return 0


def train_all(args: argparse.Namespace, schemes: list[str], desc: str) -> list[dict[str, Any]]:
    """Every scheme for every seed on one emulated network, seed-major (so a loaded machine
    slows every scheme alike), with a progress bar."""
    topo = build_topology(args.topology)
    # absolute: the hosts' processes read their plan files there, on other servers from
    # the checkout's directory (--cluster)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with Emulation(topo, out / "emulation", "embedded", args.scale, impairment(args),
                   quiet=True, cluster=getattr(args, "cluster", None),
                   switch_cpu_weight=getattr(args, "switch_cpu_weight", None)) as emu, \
            progress_bar(total=len(schemes) * len(args.seeds), desc=desc, unit="run",
                         quiet=args.quiet) as bar:
        for seed in args.seeds:
            cfg = TrafficConfig(mode="train", model=args.model, rounds=args.rounds,
                                unit_bps=emu.unit_bps, seed=seed, batch=args.batch,
                                deadline_s=args.deadline, rate_factor=args.pace,
                                pacing=args.pacing)
            for scheme in schemes:
                bar.set_postfix(scheme=scheme, seed=seed)
                rows.append(one_run(emu, scheme, seed, cfg, out, args.target_accuracy,
                                    args.eval_every, args.group_p))
                bar.update(1)
    return rows


def spread(rows: list[dict], key: str) -> dict[str, list[float]]:
    """Per scheme (in order of appearance): [median, min, max] of ``key`` over its runs;
    runs where the value is missing (e.g. the target accuracy never reached) are left out."""
    out = {}
    for scheme in dict.fromkeys(r["scheme"] for r in rows):
        vals = [r[key] for r in rows if r["scheme"] == scheme and r.get(key) is not None]
        out[scheme] = [statistics.median(vals), min(vals), max(vals)] if vals else []
    return out


def spread_table(rows: list[dict], keys: tuple[str, ...]) -> str:
    """One line per scheme: every key as median [min-max] over its runs (just the value where
    they agree, e.g. with one seed)."""
    spreads = {k: spread(rows, k) for k in keys}
    lines = []
    for scheme in spreads[keys[0]]:
        line = {"scheme": scheme, "runs": sum(r["scheme"] == scheme for r in rows)}
        for k in keys:
            v = spreads[k][scheme]
            if not v:
                line[k] = "-"
            else:
                line[k] = f"{v[0]:.4g}" if v[1] == v[2] else f"{v[0]:.4g} [{v[1]:.4g}-{v[2]:.4g}]"
        lines.append(line)
    return format_table(lines)


# every measured column, in the JSON and CSV
COLUMNS = ("scheme", "seed", "iter_s", "compute_s", "comm_s", "exchange_s", "rate_mbps",
           "images_per_s", "train_s", "final_loss", "accuracy", "time_to_target_s", "worker_bytes",
           "expected_bytes", "bytes_ratio", "tcp_retx", "ina_retx", "ps_ingress_bytes",
           "link_bytes", "pacing", "sent_over_plan", "sent_over_plan_mean", "fidelity",
           "fidelity_reasons", "fidelity_basis", "cpu_wait_ms_per_wake", "cpu_busy",
           "cpu_saturated_share", "run_queue_per_cpu", "fidelity_note", "cpu_isolation",
           "frames_dropped", "frames_held", "frames_duplicated")
# the ones printed, so that a row fits a terminal; the CSV has the rest
SHOWN = ("scheme", "seed", "iter_s", "comm_s", "rate_mbps", "final_loss", "accuracy",
         "time_to_target_s", "bytes_ratio", "tcp_retx", "ina_retx")
SPREAD_KEYS = ("iter_s", "comm_s", "rate_mbps", "time_to_target_s", "final_loss")


def summary(rows: list[dict], seeds: int) -> str:
    """What a run prints: one line per run, and per scheme the spread over the seeds when
    there are several (with one seed it would repeat the rows); then each run's fidelity
    verdict and the schemes ranked by time per iteration, unless a run was marked."""
    text = format_table([{k: r[k] for k in SHOWN} for r in rows])
    if seeds > 1:
        text += f"\n\nover {seeds} seeds: median [min-max]\n{spread_table(rows, SPREAD_KEYS)}"
    verdicts = [verdict_of(r) for r in rows if "fidelity" in r]
    isolation = sorted({note for r in rows
                        if isinstance(note := r.get("cpu_isolation"), str) and note != "none"})
    lines = ([f"cpu isolation: {note}" for note in isolation] + [v.line() for v in verdicts]
             + ranking_lines(verdicts, ranking(rows)))
    return "\n".join([text, *lines]) if lines else text


def verdict_of(row: dict) -> Verdict:
    """A row's fidelity verdict again, from its columns (the JSON keeps them)."""
    reasons = tuple(x for x in row["fidelity_reasons"].split("; ") if x)
    return Verdict(row["scheme"], row["sent_over_plan"],
                   row["ina_retx"] if row["scheme"] in INA else row["tcp_retx"],
                   row["cpu_busy"], row["cpu_saturated_share"], row["run_queue_per_cpu"],
                   reasons, row.get("fidelity_note", ""), row.get("cpu_wait_ms_per_wake"))


def ranking(rows: list[dict]) -> list[str]:
    """The schemes by median time per iteration, fastest first (one line)."""
    iters = {s: v[0] for s, v in spread(rows, "iter_s").items() if v}
    if len(iters) < 2:
        return []
    order = sorted(iters, key=iters.__getitem__)
    return ["ranking by time per iteration: "
            + " < ".join(f"{s} {iters[s]:.3g} s" for s in order)]


def write(rows: list[dict], out: Path, args: argparse.Namespace) -> None:
    """Table on stdout; JSON (with curves), CSV and PNGs under ``out``."""
    flat = [{k: r[k] for k in COLUMNS} for r in rows]
    print(summary(rows, len(args.seeds)))
    setup = {"topology": args.topology, "model": args.model, "rounds": args.rounds,
             "batch": args.batch, "seeds": args.seeds, "scale_mbps_per_unit": args.scale,
             "target_accuracy": args.target_accuracy, "pace": args.pace,
             "pacing": args.pacing, "switch_cpu_weight": getattr(args, "switch_cpu_weight", None),
             "loss_pct": getattr(args, "loss", 0.0), "dup_pct": getattr(args, "dup", 0.0),
             "reorder_pct": getattr(args, "reorder", 0.0),
             "reorder_delay_ms": getattr(args, "reorder_delay", 2.0),
             "impaired_links": ["-".join(ab) for ab in getattr(args, "impair_links", None)
                                or []] or "all"}
    (out / "head_to_head.json").write_text(json.dumps({"setup": setup, "runs": rows},
                                                       indent=1) + "\n")
    (out / "head_to_head.csv").write_text(to_csv(flat))
    plot(rows, out)
    print(f"written: {out / 'head_to_head.json'}, .csv (every column), accuracy_vs_time.png, "
          f"iteration.png")


def plot(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    colour = {s: f"C{i}" for i, s in enumerate(dict.fromkeys(r["scheme"] for r in rows))}
    for r in rows:  # one colour per scheme; its first seed labelled, the others dashed
        if r["curve"]:
            t, acc = zip(*r["curve"], strict=True)
            first = r["seed"] == min(x["seed"] for x in rows if x["scheme"] == r["scheme"])
            ax.plot(t, acc, marker=".", color=colour[r["scheme"]], ls="-" if first else "--",
                    label=r["scheme"] if first else None)
    ax.set_xlabel("training time (s, compute + communication)")
    ax.set_ylabel("test accuracy")
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "accuracy_vs_time.png", dpi=120)
    plt.close(fig)
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    comp = [statistics.fmean(r["compute_s"] for r in rows if r["scheme"] == s) for s in schemes]
    comm = [statistics.fmean(r["comm_s"] for r in rows if r["scheme"] == s) for s in schemes]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.bar(schemes, comp, label="compute")
    ax.bar(schemes, comm, bottom=comp, label="communication")
    ax.set_ylabel("seconds per iteration (median)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "iteration.png", dpi=120)
    plt.close(fig)
