"""``--script PY -- ARGS``, the same option on `inart train`, `inart emulate` and `inart run`:
a user's PyTorch script on every worker (docs/pytorch.md), checked before anything starts."""

from __future__ import annotations

import argparse
from pathlib import Path

from control_plane.cli.args import InputError
from host_stack.collectives.launch import free_port
from host_stack.ddp.hostscript import ScriptJob


class _Rest(argparse.Action):
    """The script's arguments: stored, never counted as an option the user gave (a
    positional is always "given"; `inart train` refuses options its mode does not use)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, values)


def add_script_args(p: argparse.ArgumentParser, where: str) -> None:
    """--script and the arguments after ``--`` that go to it."""
    p.add_argument("--script", default=None, metavar="PY",
                   help=f"run this PyTorch script on every worker {where} (arguments after "
                        "--); it joins with dist.init_process_group('inart') or the inart "
                        "DDP hook (docs/pytorch.md)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, action=_Rest, help=argparse.SUPPRESS)


def script_arguments(args: argparse.Namespace) -> list[str]:
    """The script's own arguments (after ``--``); InputError for stray ones without it."""
    extra = args.script_args[1:] if args.script_args[:1] == ["--"] else args.script_args
    if args.script is None and extra:
        raise InputError(f"{' '.join(extra)}: unexpected arguments (script arguments come "
                         "after --script PY --)")
    return extra


def script_job(args: argparse.Namespace, deadline_s: float) -> ScriptJob | None:
    """--script's job for the hosts' launchers (None without --script); --mode train and an
    existing file required."""
    extra = script_arguments(args)
    if args.script is None:
        return None
    if getattr(args, "mode", "train") != "train":
        raise InputError("--script: only with --mode train")
    if not Path(args.script).is_file():
        raise InputError(f"--script {args.script}: no such file")
    return ScriptJob(Path(args.script).resolve(), tuple(extra), master_port=free_port(),
                     deadline_s=deadline_s)


def script_lines(row: dict) -> list[str]:
    """What a script's run did in the network: the aggregates the switches made."""
    totals: dict[str, int] = {}
    for ev in row["switch_events"].values():
        for k, v in ev.items():
            totals[k] = totals.get(k, 0) + v
    at = ", ".join(f"{sw} {ev.get('aggregated_out', 0)}"
                   for sw, ev in sorted(row["switch_events"].items())
                   if ev.get("aggregated_out"))
    got = sum(s.get("rx_aggregated", 0) for s in row["ps"].values())
    return [f"{row['scheme']}: script ran {row['wall_s']:.1f} s; switches sent "
            f"{totals.get('aggregated_out', 0)} aggregates ({at or 'none'}), absorbed "
            f"{totals.get('absorbed_drop', 0)} packets into them; the PSs received {got}"]
