"""The InArt paper's emulation metrics (section 5.1) from one run's raw numbers.

- sending rate of a worker: the bytes it put on its link (frames incl. Ethernet/IP/UDP headers,
  retransmissions included) over its communication time, per round, in Mbit/s;
- communication time of an iteration: from a worker sending its first gradient to receiving
  the last RESULT (the worker's own clock), averaged over workers and rounds;
- network throughput: bytes carried by all links (both directions of every link, read from
  the switch-side interface counters) per iteration; this includes the RESULT copies, which the
  interface counters cannot tell apart from gradients;
- PS ingress: bytes delivered to the PSs' interfaces per iteration (gradients and aggregates);
- per-switch event counters (aggregated, absorbed, duplicate, collision, ...) read over
  P4Runtime;
- on the embedded target, per switch, why frames vanished inside it during the run (drop
  reasons and flagged parser/checksum errors, emulation.targets.embedded.stats), in the row's
  ``target_drops``, and under the table those the program did not decide itself (its own
  drops -- absorbed contributions, duplicates, no route -- are in its event counters).

With training (``--mode train``, the head-to-head) the workers finish computing at different
times and the first to start sending waits for the last: its chunks cannot aggregate before
every contribution is in, so its bytes over its communication time count its peers' compute
(fig1, CNN, kernel pacing: the last to start sent at 0.98-1.0 of plan every round while the
first, 1.4 s ahead, measured 0.39).  Whether the network carried the plan is the rate once
every worker sends: per round the rate of the worker that started last (the longest compute),
``all_sending_rate``; the verdict (emulation/measure/fidelity.py) judges that, and the workers'
mean, waiting included, is kept beside it.

The plan's promise for comparison: each worker sends f * x_s * unit to PS s, so its rate is
f * unit and a round takes max_s chunks_s * frame / (f * x_s * unit).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from statistics import mean, median

from control_plane.model.plan import Plan
from emulation.targets.embedded.stats import PROGRAM_DROPS, describe
from host_stack.train.hostrun import JobResult, TrafficConfig


def expected_comm_s(plan: Plan, chunks: dict[str, int], cfg: TrafficConfig) -> float:
    """The plan's communication time: the slowest PS stream at its paced rate."""
    if cfg.unit_bps is None or plan.rate <= 0:
        return float("nan")
    times = [chunks[s] * cfg.frame_bytes * 8 / (plan.rate * cfg.rate_factor * x * cfg.unit_bps)
             for s, x in plan.partition.items() if x > 0 and chunks.get(s)]
    return max(times) if times else float("nan")


def link_bytes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]],
               host_facing: set[str]) -> int:
    """Bytes over all link directions: every switch interface's tx, plus rx from hosts."""
    total = 0
    for name, (tx, rx) in after.items():
        total += tx - before[name][0]
        if name in host_facing:
            total += rx - before[name][1]
    return total


def directed_link_bytes(port: dict[tuple[str, str], int], before: dict[str, tuple[int, int]],
                        after: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Bytes per link direction ("a->b"), from the switch interfaces' counters: a switch
    port's tx is switch -> neighbour; where the neighbour is a host, its rx is host -> switch.
    ``port``: (switch, neighbour) -> port number, as Addressing has it."""
    switches = {sw for sw, _ in port}
    out = {}
    for (sw, nb), p in port.items():
        name = f"{sw}-eth{p}"
        out[f"{sw}->{nb}"] = after[name][0] - before[name][0]
        if nb not in switches:
            out[f"{nb}->{sw}"] = after[name][1] - before[name][1]
    return out


def all_sending_rate(rounds: list[list[dict]], first: int = 1) -> float | None:
    """Median over rounds ``first``.. of the sending rate (Mbit/s) of the worker that started
    the round's communication last (the longest ``compute_s``; the shortest ``sync_s`` or
    ``comm_s`` among equals): the rate once every worker sends.  None without compute times."""
    def comm(rec: dict) -> float:
        return rec.get("sync_s", rec.get("comm_s", 0.0)) or 0.0

    rates = []
    for r in range(first, min((len(recs) for recs in rounds), default=0)):
        recs = [recs[r] for recs in rounds if comm(recs[r]) > 0]
        if not recs or any("compute_s" not in x for x in recs):
            return None
        last = max(recs, key=lambda x: (x["compute_s"], -comm(x)))
        rates.append(last.get("bytes", 0) * 8 / comm(last) / 1e6)
    return median(rates) if rates else None


def summarize(plan: Plan, job: JobResult, cfg: TrafficConfig, link_total: int, ps_ingress: int,
              switch_events: dict[str, dict[str, int]], skip_first: bool = True) -> dict:
    """One scheme's row: measured metrics beside the plan's."""
    rounds = len(next(iter(job.rounds.values()), []))
    first = 1 if skip_first and rounds > 1 else 0  # round 0 includes HELLO and start-up
    comm, rates, retx = [], [], 0
    per_worker_rate = {}
    for w, recs in job.rounds.items():
        mine = []
        for rec in recs[first:]:
            if rec.get("comm_s"):
                comm.append(rec["comm_s"])
                mine.append(rec["bytes"] * 8 / rec["comm_s"] / 1e6)
        for rec in recs:
            retx += rec.get("retx", 0)
        per_worker_rate[w] = mean(mine) if mine else 0.0
        rates += mine
    unit_mbps = (cfg.unit_bps or 0) / 1e6
    plan_rate = plan.rate * cfg.rate_factor * unit_mbps
    want_comm = expected_comm_s(plan, job.chunks, cfg)
    comm_s = mean(comm) if comm else float("nan")
    rate = mean(rates) if rates else 0.0
    all_sending = (all_sending_rate(list(job.rounds.values()), first)
                   if cfg.mode == "train" else None)  # synthetic: all start together
    judged = rate if all_sending is None else all_sending
    totals: dict[str, int] = {}
    for ev in switch_events.values():
        for k, v in ev.items():
            totals[k] = totals.get(k, 0) + v
    return {
        "scheme": plan.scheme,
        "plan_rate_units": plan.rate,
        "plan_rate_mbps": plan_rate,
        "rate_mbps": rate,
        # the verdict's: the rate once every worker sends (training; else the workers' mean)
        "rate_all_sending_mbps": all_sending,
        "rate_ratio": judged / plan_rate if plan_rate else float("nan"),
        "rate_ratio_mean": rate / plan_rate if plan_rate else float("nan"),
        # against the plan itself, whatever the pacing headroom (`inart emulate --pace`)
        "plan_ratio": judged / (plan.rate * unit_mbps) if plan.rate * unit_mbps else float("nan"),
        "rate_min_mbps": min(per_worker_rate.values(), default=0.0),
        "comm_s": comm_s,
        "plan_comm_s": want_comm,
        "comm_ratio": comm_s / want_comm if want_comm == want_comm else float("nan"),
        "network_bytes_per_iter": link_total / rounds if rounds else 0,
        "network_mbps": link_total * 8 / rounds / comm_s / 1e6 if rounds and comm else 0.0,
        "ps_ingress_bytes_per_iter": ps_ingress / rounds if rounds else 0,
        "retx": retx,
        "exact": job.exact,
        "rounds": rounds,
        "aggregated_out": totals.get("aggregated_out", 0),
        "absorbed": totals.get("absorbed_drop", 0),
        "duplicate_drop": totals.get("duplicate_drop", 0),
        "collision": totals.get("collision", 0),
        "retx_bypass": totals.get("retx_bypass", 0),
        "no_route_drop": totals.get("no_route_drop", 0),
        "per_worker_rate_mbps": per_worker_rate,
        "switch_events": switch_events,
    }


COLUMNS = [("scheme", "{:>8s}"), ("plan_rate_mbps", "{:>9.3f}"), ("rate_mbps", "{:>9.3f}"),
           ("rate_ratio", "{:>6.2f}"), ("plan_comm_s", "{:>8.3f}"), ("comm_s", "{:>8.3f}"),
           ("comm_ratio", "{:>6.2f}"), ("network_bytes_per_iter", "{:>11.0f}"),
           ("ps_ingress_bytes_per_iter", "{:>11.0f}"), ("aggregated_out", "{:>8d}"),
           ("duplicate_drop", "{:>6d}"), ("collision", "{:>6d}"), ("retx", "{:>6d}"),
           ("exact", "{!s:>6}")]
HEADERS = ["scheme", "plan Mb/s", "Mb/s", "ratio", "plan s", "comm s", "ratio", "net B/iter",
           "PS in B/it", "agg out", "dups", "coll", "retx", "exact"]


def table(rows: list[dict]) -> str:
    """The rows as aligned text (one line per scheme), then one line per scheme and embedded
    switch that lost frames inside the target for a reason other than the program's own drops:
    ``embedded drops v1: reason=count ...``."""
    widths = [len(fmt.format(rows[0][k])) if rows else 8 for k, fmt in COLUMNS]
    head = " ".join(h.rjust(w) for h, w in zip(HEADERS, widths, strict=True))
    lines = [head]
    for row in rows:
        lines.append(" ".join(fmt.format(row[k]) for k, fmt in COLUMNS))
    for row in rows:
        for sw, counts in row.get("target_drops", {}).items():
            lost = {r: n for r, n in counts.items() if r not in PROGRAM_DROPS}
            if lost:
                lines.append(f"{row['scheme']}: embedded drops {sw}: {describe(lost)}")
    return "\n".join(lines)


def write_rows(rows: list[dict], out_dir: Path, stem: str) -> tuple[Path, Path]:
    """rows as JSON (full) and CSV (scalar columns)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    jpath, cpath = out_dir / f"{stem}.json", out_dir / f"{stem}.csv"
    jpath.write_text(json.dumps(rows, indent=1, default=str) + "\n")
    cols = [k for k, v in rows[0].items() if not isinstance(v, dict)] if rows else []
    with cpath.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return jpath, cpath
