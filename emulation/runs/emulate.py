"""One emulation: a network for a topology, then per scheme: install its plan, run, measure.

The network is built once per topology and kept for every scheme and rate: installing a plan
pushes the pipeline again, which resets every table, register and counter, so schemes never
see each other's state.  ``STATE_FILE`` (control_plane/repo.py) names the latest emulation's
switches and their P4Runtime addresses, so ``inart shell SWITCH`` and ``inart ctl topology``
find them while it runs (its emulation removes it on teardown).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from control_plane.cli.args import progress as progress_bar
from control_plane.deploy.addressing import Addressing, assign
from control_plane.deploy.counters import events_since, read_events
from control_plane.deploy.entries import Compiled, compile_plan
from control_plane.deploy.pipeline import Pipeline
from control_plane.deploy.transaction import addressed_switches, install
from control_plane.model.plan import Plan
from control_plane.model.topology import Topology
from control_plane.observe.exporter import MetricsError, MetricsServer
from control_plane.observe.p4runtime_metrics import registry_for as p4runtime_registry
from control_plane.observe.web import WebError, WebView
from control_plane.p4build.sources import event_names
from control_plane.repo import EMULATION_STATE
from emulation.cluster.run import Cluster
from emulation.cluster.spec import ClusterSpec
from emulation.measure.fidelity import Verdict, judge
from emulation.measure.metrics import link_bytes, summarize
from emulation.measure.resources import Monitor, Usage
from emulation.measure.timeseries import Gatherer
from emulation.network.cpu_isolation import CpuIsolation, IsolationError
from emulation.network.host_pacing import Stream
from emulation.network.link_impair import NO_IMPAIRMENT, LinkImpairment, frames_since
from emulation.network.mininet_net import Network, NetworkError, queue_for
from emulation.runs.live_view import EmulationView
from emulation.targets.embedded.stats import StatsError, read_stats, reasons
from host_stack.ddp.hostscript import ScriptJob, run_script_hosts
from host_stack.ina import wire
from host_stack.train.hostrun import (
    JobResult,
    TrafficConfig,
    plan_files,
    run_job,
    transport_argv,
)

STATE_FILE = EMULATION_STATE
SERIES_FILE = "metrics.jsonl"  # beside emulate.json: every process's metrics, every second


def _forget_state() -> None:
    """Remove the state file if this process wrote it (another emulation that started since
    keeps its own)."""
    try:
        mine = json.loads(STATE_FILE.read_text()).get("pid") == os.getpid()
    except (OSError, ValueError, AttributeError):
        return
    if mine:
        STATE_FILE.unlink(missing_ok=True)


@dataclass
class Run:
    """A finished scheme run: the plan, its entries, the processes' output, the metrics and
    whether they are the scheme's or the machine's."""

    plan: Plan
    compiled: Compiled
    job: JobResult
    row: dict
    verdict: Verdict


class _Stop(BaseException):
    """SIGTERM or SIGHUP while the network is kept up (Mininet's CLI swallows
    KeyboardInterrupt, so the signal handler raises this instead)."""


def _stop(signum, _frame) -> None:
    raise _Stop(f"signal {signum}")


class Emulation:
    """A running network plus the operations the CLI and experiments need."""

    def __init__(self, topology: Topology, out_dir: Path, target: str = "embedded",
                 scale: float = 0.5, impair: LinkImpairment = NO_IMPAIRMENT,
                 quiet: bool = False, program: Pipeline | None = None,
                 window: int = TrafficConfig.window, fork_server: bool = True,
                 cluster: ClusterSpec | None = None, switch_cpu_weight: int | None = None,
                 metrics: str | None = None, web: str | None = None) -> None:
        """``metrics``: where to serve every process's metrics (HOST:PORT, port 0 any free
        one); ``web``: where to serve the live web view.  With either, every process's
        metrics are also written to OUT_DIR/metrics.jsonl every second."""
        self.topo = topology
        self.out_dir = out_dir.resolve()  # hosts' processes and switches get absolute paths
        self.addr: Addressing = assign(topology)
        servers = None
        if cluster is not None:  # nodes on several servers; P4Runtime on their addresses
            servers = Cluster(cluster, topology, self.addr, target)
            self.addr = servers.addressing(self.addr)
        self.program = program or Pipeline()
        self.quiet = quiet
        self.scale = scale
        self.window = window  # the most any run's TrafficConfig may keep in flight per stream
        self.metrics_address, self.web_address = metrics, web
        gather = metrics is not None or web is not None
        self.metrics_dir = self.out_dir / "metrics" if gather else None
        if self.metrics_dir is not None:  # the switches bind their sockets there at start
            self.metrics_dir.mkdir(parents=True, exist_ok=True)
        self.gatherer: Gatherer | None = None
        self.exporter: MetricsServer | None = None
        self.web: WebView | None = None
        self.view: EmulationView | None = None
        self.observing = True  # the hosts serve metrics and the gatherer scrapes (observe)
        self.net = Network(topology, self.addr, self.out_dir / "logs", target, scale, impair,
                           quiet, queue_for(len(topology.workers), len(topology.pss), window),
                           fork_server, servers, self.metrics_dir)
        self.installed: str | None = None
        self.paced: dict[str, list[Stream]] = {}  # the workers' pacing classes now
        self.pacing_fallback: str | None = None  # why the kernel could not pace, if so
        self.switch_cpu_weight = switch_cpu_weight if cluster is None else None
        if cluster is not None and switch_cpu_weight is not None:
            print("emulation: running without CPU isolation: --switch-cpu-weight weights the "
                  "processes of this machine only, and with --cluster the switches and hosts "
                  "run on the servers", file=sys.stderr, flush=True)
        self.isolation: CpuIsolation | None = None
        self.isolation_note = "none"  # what the rows say (cpu_isolation)
        self.monitor = Monitor(lambda: {"switches": self.net.switch_pids(),
                                        "hosts": self.net.host_pids()})

    def __enter__(self) -> Emulation:
        self.program.check()
        self.monitor.__enter__()
        try:
            self.net.__enter__()
        except BaseException:
            self.monitor.__exit__()
            raise
        if self.switch_cpu_weight is not None:
            self.isolate(self.switch_cpu_weight)
        if self.metrics_dir is not None:
            self._start_metrics()
        STATE_FILE.write_text(json.dumps({
            "switches": {sw: {"grpc": self.addr.grpc_address(sw),
                              "device_id": self.addr.device_id[sw]}
                         for sw in self.topo.switches},
            "p4info": str(self.program.p4info), "config": str(self.program.config),
            "out_dir": str(self.out_dir), "pid": os.getpid()}))
        return self

    def _start_metrics(self) -> None:
        """The gatherer, then the metrics exporter and the web view that were asked for."""
        assert self.metrics_dir is not None
        local = {} if self.net.target == "embedded" else {
            sw: p4runtime_registry(address, self.program.p4info, self.net.switch_ports(sw))
            for sw, address in addressed_switches(self.addr).items()}
        self.gatherer = Gatherer(self.metrics_dir, self.out_dir / SERIES_FILE,
                                 local=local).start()
        try:
            if self.metrics_address is not None:
                self.exporter = MetricsServer(self.metrics_address, self.gatherer.registry)
            if self.web_address is not None:
                self.view = EmulationView(self.net, self.unit_bps, self.gatherer)
                self.web = WebView(self.web_address, self.view.snapshot)
        except (MetricsError, WebError):
            self.__exit__(None, None, None)
            raise

    def observe(self, on: bool) -> None:
        """Whether the next runs' hosts serve metrics and the gatherer scrapes (the switches
        keep serving theirs, which costs nothing unscraped): `inart bench observe` runs with
        and without on one network."""
        self.observing = on
        if self.gatherer is not None:
            (self.gatherer.active.set if on else self.gatherer.active.clear)()

    def __exit__(self, *exc) -> None:
        try:
            if self.gatherer is not None:
                self.gatherer.close()
            if self.exporter is not None:
                self.exporter.close()
            if self.web is not None:
                self.web.close()
            self.net.__exit__(*exc)
        finally:
            self.isolate(None)
            self.monitor.__exit__()
            _forget_state()

    def isolate(self, weight: int | None) -> str:
        """Weight the switches' CPU share against the hosts' (emulation/network/cpu_isolation.py),
        or end that (None); returns what the rows will say.  Where cgroups cannot do it, says
        why on stderr and runs without."""
        if self.isolation is not None:
            self.isolation.release()
            self.isolation, self.isolation_note = None, "none"
        if weight is None:
            return self.isolation_note
        try:
            isolation = CpuIsolation(weight)
            self.isolation_note = isolation.apply(self.net.switch_pids(),
                                                  [os.getpid(), *self.net.host_pids()])
            self.isolation = isolation
        except IsolationError as exc:
            self.isolation_note = f"unavailable: {exc}"
            print(f"emulation: running without CPU isolation: {exc}", file=sys.stderr,
                  flush=True)
        return self.isolation_note

    @property
    def unit_bps(self) -> float:
        return self.scale * 1e6

    def install(self, plan: Plan) -> Compiled:
        """The plan on every switch through the deploy layer, as `inart install --reset`
        would: a fresh pipeline (zeroed registers and counters), then all entries; a refused
        write undoes the others and raises DeployError naming the switch and the entry."""
        compiled = compile_plan(plan, self.addr)
        with progress_bar(total=compiled.total(), desc="install", unit="entry",
                  quiet=self.quiet) as bar:
            def progress(switch: str, stage: str, count: int) -> None:
                bar.set_postfix(switch=switch)
                if stage == "written":
                    bar.update(count)

            install(compiled, addressed_switches(self.addr), self.program, reset=True,
                    progress=progress)
        self.net.set_result_arp(compiled.result_addr)
        self.installed = plan.scheme
        if self.view is not None:
            self.view.installed(plan)
        (self.out_dir / f"entries-{plan.scheme}.txt").write_text(
            compiled.summary_table() + "\n\n" + "\n".join(
                f"{sw}: {e.describe()}" for sw, s in compiled.switches.items()
                for e in s.entries) + "\n")
        if not self.quiet:
            print(f"installed {plan.scheme}: {compiled.total()} entries/groups on "
                  f"{len(compiled.switches)} switches")
            print(compiled.summary_table())
        return compiled

    def explore(self, cli: bool = False) -> None:
        """Keep the network up for a user to look around: Mininet's CLI (``cli``) until exit or
        end of input, else until Ctrl-C or SIGTERM; `inart shell SWITCH` attaches meanwhile.
        Returns normally either way, so the caller tears the network down as after a run."""
        plan = f"the {self.installed} plan installed" if self.installed else "no plan installed"
        print(f"network up: {self.topo.name}, {plan}; P4Runtime "
              + ", ".join(f"{sw} {self.addr.grpc_address(sw)} (device {self.addr.device_id[sw]})"
                          for sw in self.topo.switches))
        print(f"  inart shell {self.topo.switches[0]}  # p4runtime-shell on a switch, from "
              f"another terminal")
        if cli:
            print("Mininet's CLI: pingall, w1 ping -c1 s1, sh inart shell v1, ...; exit or "
                  "Ctrl-D tears the network down", flush=True)
        else:
            print("Ctrl-C tears the network down", flush=True)
        old = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
        try:
            if cli:
                from mininet.cli import CLI
                from mininet.log import setLogLevel

                setLogLevel("output")  # the CLI's answers (the network runs at "error")
                try:
                    CLI(self.net.net)
                finally:
                    setLogLevel("error")
            else:
                self._wait()
        except (KeyboardInterrupt, _Stop):
            print("\ntearing the network down", file=sys.stderr, flush=True)
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)

    def _wait(self) -> None:
        """Until interrupted; says once if a switch dies meanwhile."""
        dead: set[str] = set()
        while True:
            time.sleep(1.0)
            for sw in self.net.net.switches:
                problem = sw.switch.health() if sw.switch is not None else "stopped"
                if problem and sw.name not in dead:
                    dead.add(sw.name)
                    print(f"emulation: switch {sw.name} {problem} (log "
                          f"{sw.log_path})", file=sys.stderr, flush=True)

    def switch_events(self) -> dict[str, dict[str, int]]:
        return read_events(addressed_switches(self.addr), self.program.p4info, event_names())

    def target_stats(self) -> dict[str, dict]:
        """Each embedded switch's statistics document (empty for other targets, and for a
        switch that does not answer: the run goes on without its drop reasons)."""
        if self.net.target != "embedded":
            return {}
        out = {}
        for sw in self.topo.switches:
            try:
                out[sw] = read_stats(self.addr.grpc_address(sw))
            except StatsError as exc:
                print(f"(no drop statistics from {sw}: {exc})")
        return out

    def streams(self, plan: Plan, cfg: TrafficConfig) -> dict[str, list[Stream]]:
        """Each worker's INA streams at the rates ``cfg`` paces them to, where the kernel
        paces them (``cfg.pacing``); else none."""
        if cfg.pacing != "kernel" or cfg.unit_bps is None or plan.rate <= 0:
            return {}
        rate = plan.rate * cfg.rate_factor * cfg.unit_bps
        return {w: [Stream(self.addr.ip[s], wire.GRAD_PORT, rate * x)
                    for s, x in sorted(plan.partition.items()) if x > 0]
                for w in self.topo.workers}

    def paced_config(self, plan: Plan | None, cfg: TrafficConfig) -> TrafficConfig:
        """Set up the workers' pacing classes for a run of ``plan`` (None: not INA, none)
        and return the config its hosts run with: ``cfg``, or ``cfg`` with user pacing where
        the kernel's classes could not be set up (``pacing_fallback`` says why)."""
        streams = self.streams(plan, cfg) if plan is not None else {}
        if streams == self.paced:
            return cfg
        try:
            self.net.pace(streams, cfg.frame_bytes)
            self.paced = streams
            return cfg
        except NetworkError as exc:
            self.pacing_fallback = str(exc)
            self.net.pace({})
            self.paced = {}
            return replace(cfg, pacing="user")

    def pacing_note(self, cfg: TrafficConfig, job: JobResult) -> dict:
        """Which pacer held the INA senders, and (kernel) the share of the workers' bytes
        that their pacing classes carried: read from tc, not assumed."""
        if cfg.unit_bps is None:
            return {"pacing": "unpaced"}
        if not self.paced:
            fallback = self.pacing_fallback if cfg.pacing == "user" else None
            return {"pacing": "user", **({"pacing_fallback": fallback} if fallback else {})}
        counts = self.net.paced_counts(self.paced)
        sent = sum(r.get("bytes", 0) for recs in job.rounds.values() for r in recs)
        return {"pacing": "kernel", "kernel_paced_bytes": counts["bytes"],
                "kernel_paced_share": counts["bytes"] / sent if sent else float("nan"),
                "kernel_paced_drops": counts["dropped"]}

    def verdict(self, scheme: str, rate_ratio: float | None, retx: int, usage: Usage) -> Verdict:
        return judge(scheme, rate_ratio, retx, usage.machine_busy, usage.saturated_share,
                     usage.run_queue, self.net.impair.active, usage.wake_wait_ms)

    def run(self, plan: Plan, compiled: Compiled, cfg: TrafficConfig, tag: str) -> Run:
        """Traffic for an installed plan; counters are deltas over this run."""
        if cfg.window > self.window:
            raise ValueError(f"window {cfg.window}: expected <= {self.window}, the window the "
                             f"network's queues were sized for (Emulation(window=...))")
        host_facing = {f"{self.addr.tor[h]}-eth{self.addr.port[(self.addr.tor[h], h)]}"
                       for h in self.topo.workers + self.topo.pss}
        ps_facing = {f"{self.addr.tor[s]}-eth{self.addr.port[(self.addr.tor[s], s)]}"
                     for s in self.topo.pss}
        cfg = self.paced_config(plan, cfg)
        if self.metrics_dir is not None and self.observing:
            cfg = replace(cfg, metrics_dir=str(self.metrics_dir))
        ev0 = self.switch_events()
        st0 = self.target_stats()
        if0 = self.net.interface_bytes()
        im0 = self.net.impairment_counts()
        self.monitor.mark()
        if self.view is not None:
            self.view.started()
        job = run_job(self.net, self.addr, plan, compiled, cfg, self.out_dir / "hosts" / tag,
                      self.quiet)
        usage = self.monitor.usage()
        if1 = self.net.interface_bytes()
        im1 = self.net.impairment_counts()
        ev1 = self.switch_events()
        st1 = self.target_stats()
        events = events_since(ev0, ev1)
        total = link_bytes(if0, if1, host_facing)
        ps_in = sum(if1[i][0] - if0[i][0] for i in ps_facing)
        row = summarize(plan, job, cfg, total, ps_in, events)
        row["rate_factor"] = cfg.rate_factor
        row["scale_mbps_per_unit"] = self.scale
        row["target_drops"] = {sw: reasons(st1[sw], since=st0[sw]) for sw in st1 if sw in st0}
        row["impairment"] = self.net.impair.describe()
        row.update(frames_since(im0, im1))  # what the links' impairment rules did
        row.update(cpu_ran_s=usage.ran_s, cpu_waited_s=usage.waited_s,
                   cpu_slices=usage.slices)
        row.update(wall_s=usage.wall_s, peak_pss_mb=usage.peak_pss_mb,
                   peak_rss_mb=usage.peak_rss_mb,
                   switch_pss_mb=usage.peak_split_mb.get("switches", 0.0),
                   host_pss_mb=usage.peak_split_mb.get("hosts", 0.0),
                   switch_cores=usage.cores.get("switches", 0.0),
                   host_cores=usage.cores.get("hosts", 0.0), machine_busy=usage.machine_busy,
                   cpus=usage.cpus)
        row.update(self.pacing_note(cfg, job))
        row["cpu_isolation"] = self.isolation_note
        verdict = self.verdict(plan.scheme, row["rate_ratio"] if cfg.unit_bps else None,
                               row["retx"], usage)
        row.update(verdict.fields())
        if self.view is not None:
            self.view.finished(row, "ok" if verdict.ok else "marked: " + "; ".join(
                verdict.reasons))
        return Run(plan, compiled, job, row, verdict)

    def run_script(self, plan: Plan, compiled: Compiled, job: ScriptJob, cfg: TrafficConfig,
                   tag: str) -> dict:
        """A user's PyTorch script on every worker host over an installed plan (its
        all-reduces through the switches, paced to the plan as ``cfg`` says); the switches'
        event counters over the run."""
        workdir = self.out_dir / "hosts" / tag
        workdir.mkdir(parents=True, exist_ok=True)
        source = plan_files(self.addr, plan, compiled, workdir)
        rank0 = min(source.workers, key=source.ranks.get)
        cfg = self.paced_config(plan, cfg)
        job = replace(job, master_addr=self.addr.ip[rank0], job_argv=tuple(transport_argv(cfg)),
                      iface={w: f"{w}-eth0" for w in source.workers})
        ev0 = self.switch_events()
        result = run_script_hosts(self.net, source, job, workdir, self.quiet)
        ev1 = self.switch_events()
        events = events_since(ev0, ev1)
        return {"scheme": plan.scheme, "wall_s": result.wall_s, "switch_events": events,
                "ps": result.ps_stats, "rank0_lines": result.rank0_lines,
                "pacing": cfg.pacing if cfg.unit_bps is not None else "none"}

    def find_max_rate(self, plan: Plan, compiled: Compiled, cfg: TrafficConfig,
                      factors: list[float], retx_threshold: float = 0.01,
                      rate_slack: float = 0.04) -> list[dict]:
        """Pace at f x factor for increasing factors until the network stops carrying it.

        A factor "holds" when retransmitted packets stay under ``retx_threshold`` of all
        packets sent, every aggregate is exact and the measured rate is within ``rate_slack``
        of the paced one; the sweep stops after the first that fails.  The rate test is needed
        because queues hold every window (``queue_for``) and the timeout floor waits for them:
        above a bottleneck's capacity the excess mostly waits in its queue instead of being
        lost, so the measured rate flattens at the capacity (fig1 atp: 0.50 Mbit/s paced at
        x1.2 and x1.35, no resends) before retransmissions appear.  At the plans' own rates the
        measured rate is 0.98-1.00 of the paced one.
        """
        rows = []
        for factor in factors:
            self.install(plan)  # fresh registers and counters
            run = self.run(plan, compiled, replace(cfg, rate_factor=factor),
                           f"{plan.scheme}-x{factor:g}")
            sent = sum(r.get("packets", 0) for recs in run.job.rounds.values() for r in recs)
            frac = run.row["retx"] / sent if sent else 1.0
            carried = run.row["rate_ratio"] >= 1 - rate_slack
            ok = frac <= retx_threshold and run.job.exact is not False and carried
            rows.append({"scheme": plan.scheme, "factor": factor,
                         "paced_mbps": run.row["plan_rate_mbps"],
                         "rate_mbps": run.row["rate_mbps"], "rate_ratio": run.row["rate_ratio"],
                         "retx_fraction": frac, "holds": ok})
            if not ok:
                break
        return rows
