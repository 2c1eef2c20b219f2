"""`inart bench ddp`: PyTorch DDP over INA beside gloo, on the same plan and network.

On fig1's inart plan (solved here), each figure measured for both backends in one run:
- all_reduce throughput by tensor size (1, 4 and 25 MB, the last DDP's default bucket) on
  loopback PSs (host_stack/ddp/bench_allreduce.py); goal: INA >= gloo at 25 MB; and the
  machine's CPU time per call (all processes together), which bounds the throughput where
  the processes outnumber the cores;
- ResNet-18 DDP steps on loopback (examples/ddp_resnet.py --time-comm): step time (forward +
  backward, which waits for the last bucket), the compute alone (DDP no_sync steps), the
  communication (all-reduces in flight, overlaps once) and the share of it hidden behind
  backward (1 - exposed / communication, exposed = step - compute); goal: INA step <= gloo;
- time to accuracy of ResNet-18 on the digits task, same seed (no goal: a reading);
- on the fig1 Mininet emulation (embedded P4 switches; --no-emulation skips it), a small GPT's
  step time, INA over gloo, beside the communication time the plan predicts for INA.
With a GPU, NCCL would join the loopback figures; this machine has none (the line says so).
Where the job's processes outnumber the cores, the figures rank this machine's CPU use, not
the two paths' networks, and a line says so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from control_plane.bench.figures import figure, line
from control_plane.cli.args import add_json, add_quiet, write_json
from control_plane.repo import REPO, child_env
from host_stack.ddp.allreduce import deal
from host_stack.ina.jobplan import load_plan
from host_stack.ina.pacing import FRAME_OVERHEAD
from host_stack.ina.wire import DEFAULT_N, packet_len
from host_stack.train.bench import fig1_plan

BACKENDS = ("gloo", "inart")
EXAMPLES = REPO / "examples"
BENCH_SCRIPT = Path(__file__).with_name("bench_allreduce.py")
EMU_MODEL = ("--width", "32", "--layers", "1", "--context", "8", "--vocab", "8")


def versus(name: str, ina: float, gloo: float, unit: str, op: str | None, **extra) -> dict:
    """A figure of INA's value beside gloo's: the ratio INA/gloo, and its goal (``op`` 1:
    ">=" where more is better, "<=" where less is)."""
    ratio = ina / gloo if gloo else float("nan")
    out = {"name": name, "value": round(ina, 4), "unit": unit, "ratio": round(ratio, 3)}
    if op is not None:
        out.update(goal=f"INA/gloo {op} 1", met=ratio >= 1 if op == ">=" else ratio <= 1)
    return out | {f"gloo_{unit.replace('/', 'p')}": round(gloo, 4)} | extra


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plan", default=None, help="plan file (default: fig1, inart)")
    parser.add_argument("--steps", type=int, default=6, help="ResNet-18 steps timed per "
                                                             "backend (default 6)")
    parser.add_argument("--tta-steps", type=int, default=60,
                        help="time-to-accuracy: steps per backend (0: skip; default 60)")
    parser.add_argument("--target", type=float, default=0.8,
                        help="time-to-accuracy: the test accuracy to reach (default 0.8)")
    parser.add_argument("--no-emulation", dest="emulation", action="store_false",
                        help="skip the fig1 Mininet figures")
    add_json(parser, "the figures")
    add_quiet(parser)
    parser.set_defaults(func=run)


def script_run(plan: str, script: Path, args: list[str]) -> list[dict]:
    """rank 0's JSON lines of one `inart train --script` run."""
    cmd = [sys.executable, "-m", "control_plane.cli", "train", "--plan", plan, "--script",
           str(script), "--", *args]
    run = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=3600)
    if run.returncode:
        raise RuntimeError(f"{script.name} {' '.join(args)}: {run.stderr.strip()[-2000:]}")
    return [json.loads(s.split("] ", 1)[1]) for s in run.stdout.splitlines()
            if s.startswith("[") and "] {" in s]


def throughput(plan: str) -> list[dict]:
    rows = {b: {r["mb"]: r for r in script_run(plan, BENCH_SCRIPT, ["--backend", b])
                if r.get("event") == "allreduce"} for b in BACKENDS}
    out = []
    for mb in sorted(rows["inart"]):
        out.append(versus(f"ddp.allreduce[{mb:g}MB]", rows["inart"][mb]["gbps"],
                          rows["gloo"][mb]["gbps"], "Gb/s", ">=" if mb == 25 else None))
    # what one call costs the machine, every process together: the figure that decides the
    # ranking where the job's processes outnumber the cores
    for mb in sorted(rows["inart"]):
        out.append(versus(f"ddp.allreduce_cpu[{mb:g}MB]", rows["inart"][mb]["cpu_s"] * 1e3,
                          rows["gloo"][mb]["cpu_s"] * 1e3, "ms", None))
    return out


def steps(plan: str, n: int) -> tuple[list[dict], dict]:
    """Step time, compute, communication and hidden share of ResNet-18 for both backends."""
    per = {}
    for b in BACKENDS:
        recs = [r for r in script_run(plan, EXAMPLES / "ddp_resnet.py", [
            "--backend", b, "--steps", str(n + 1), "--time-comm", "--compute-steps", "3",
            "--batch", "16"]) if r.get("event") == "step"][1:]  # the first: set-up
        step = sum(r["step_s"] for r in recs) / len(recs)
        comm = sum(r["comm_busy_s"] for r in recs) / len(recs)
        compute = recs[0]["compute_s"]
        exposed = max(0.0, step - compute)
        per[b] = {"step_s": step, "compute_s": compute, "comm_s": comm,
                  "hidden": max(0.0, min(1.0, 1 - exposed / comm)) if comm else 0.0}
    ina, gloo = per["inart"], per["gloo"]
    out = [versus("ddp.step[resnet18]", ina["step_s"], gloo["step_s"], "s", "<=")]
    for b in BACKENDS:
        out.append(figure(f"ddp.hidden[resnet18,{b}]", per[b]["hidden"], "", None,
                           comm_s=round(per[b]["comm_s"], 4),
                           compute_s=round(per[b]["compute_s"], 4)))
    return out, per


def time_to_accuracy(plan: str, n: int, target: float) -> list[dict]:
    reached = {}
    for b in BACKENDS:
        recs = script_run(plan, EXAMPLES / "ddp_resnet.py", [
            "--backend", b, "--steps", str(n), "--eval-every", "5", "--batch", "16",
            "--size", "16"])
        hits = [r["elapsed_s"] for r in recs if r.get("event") == "eval"
                and r["accuracy"] >= target]
        reached[b] = hits[0] if hits else float("nan")
    return [versus(f"ddp.tta[resnet18,digits,{target:g}]", reached["inart"], reached["gloo"],
                   "s", None, steps=n)]


def emulation(plan_path: str, workdir: Path) -> list[dict]:
    """A small GPT on fig1 emulated (embedded switches): INA/gloo step time, and INA's
    communication against the plan's prediction."""
    from host_stack.models.gpt import TinyGPT  # imports torch: only here

    step = {}
    comm = {}
    for b in BACKENDS:
        out = workdir / f"emulate-{b}"
        cmd = [sys.executable, "-m", "control_plane.cli", "emulate", "-t", "fig1", "-s",
               "inart", "--mode", "train", "--quiet", "--out", str(out), "--script",
               str(EXAMPLES / "ddp_gpt.py"), "--", "--backend", b, "--steps", "4",
               "--time-comm", *EMU_MODEL]
        run = subprocess.run(cmd, capture_output=True, text=True, env=child_env(),
                             timeout=3600)
        if run.returncode:
            raise RuntimeError(f"emulate ({b}): {run.stderr.strip()[-2000:]}")
        (row,) = json.loads((out / "emulate.json").read_text())
        recs = [json.loads(s) for s in row["rank0_lines"] if '"step"' in s][1:]
        step[b] = sum(r["step_s"] for r in recs) / len(recs)
        comm[b] = sum(r["comm_busy_s"] for r in recs) / len(recs)
    plan = load_plan(plan_path)
    values = sum(p.numel() for p in TinyGPT(8, 8, 32, 4, 1).parameters())
    chunks = -(-values // DEFAULT_N)
    shares = [plan.shares[s] for s in plan.ps_ids]
    frame_bits = (packet_len(DEFAULT_N) + FRAME_OVERHEAD) * 8
    unit_bps = 0.25e6  # `inart emulate`'s default --scale
    predicted = max(k * frame_bits / (plan.rate * x * unit_bps)
                    for k, x in zip(deal(chunks, shares, [chunks] * len(shares)), shares,
                                    strict=True) if x > 0)
    pred = figure("ddp.emulation[fig1,comm/plan]", comm["inart"], "s", None,
                  plan_comm_s=round(predicted, 3), gloo_comm_s=round(comm["gloo"], 3))
    pred["ratio"] = round(comm["inart"] / predicted, 3)
    return [versus("ddp.emulation[fig1,step]", step["inart"], step["gloo"], "s", None), pred]


def run(args: argparse.Namespace) -> int:
    figures: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="inart-bench-ddp-") as tmp:
        plan = args.plan or fig1_plan(Path(tmp))
        loaded = load_plan(plan)
        procs, cores = loaded.workers + len(loaded.ps_ids), os.cpu_count() or 1
        parts = [("all_reduce by size", lambda: throughput(plan)),
                 ("ResNet-18 steps", lambda: steps(plan, args.steps)[0])]
        if args.tta_steps:
            parts.append(("time to accuracy",
                          lambda: time_to_accuracy(plan, args.tta_steps, args.target)))
        if args.emulation:
            parts.append(("fig1 emulation", lambda: emulation(plan, Path(tmp))))
        for what, part in parts:
            if not args.quiet:
                print(f"bench ddp: {what} ...", file=sys.stderr, flush=True)
            figures += part()
    for fig in figures:
        print(line(fig))
    print("ddp.nccl: skipped: no GPU on this machine (torch.cuda.is_available() is False)"
          if not _has_gpu() else "ddp.nccl: a GPU is present; NCCL figures are not part of "
                                 "this benchmark yet")
    if procs > cores:
        cpu = next((f for f in figures if f["name"] == "ddp.allreduce_cpu[25MB]"), None)
        cost = (f": a 25 MB all_reduce cost it {cpu['ratio']:.2f}x gloo's CPU time with INA"
                if cpu else "")
        print(f"machine-bound: {procs} processes (workers and PSs) on {cores} cores; the "
              "loopback figures rank how the two paths use this machine's CPU, not their "
              f"networks{cost}")
    if args.json:
        write_json(args.json, {"figures": figures, "processes": procs, "cores": cores})
    return 0


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()
