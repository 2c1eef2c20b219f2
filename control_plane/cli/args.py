"""The `inart` grammar in code: every command builds its shared options from these helpers, so
one concept has one option, one syntax and one exit status everywhere (docs/cli.md).

- ``-t/--topology``, ``-s/--scheme``, ``--seeds``, ``--plan``, ``--model``: comma lists where a
  command takes several (``topologies``, ``names_of``, ``seed_list``).
- ``--json [PATH]``: write JSON to PATH; no value or ``-``: print it (``add_json``,
  ``write_json``).
- ``--out DIR`` (default ``out/<command>``) and ``-q/--quiet`` (``add_out``, ``add_quiet``).
- old spellings keep working one release with one line on stderr (``deprecate``).
- exit 2 for bad arguments or input files (``InputError``, raised before long work), 1 for a
  run that started and failed (``RunFailed``); the dispatcher turns both into one line.
- progress bars (``progress``): a bar on a terminal, plain lines in a log, none with --quiet.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

# scheme groups every command understands (each keeps the members it can run)
COLLECTIVE_SCHEMES = ("ring", "tree", "rsgcm", "torch", "selective")
JSON_STDOUT = "-"
OUTPUTS = ".inart-outputs"  # in an --out directory: the files the last run wrote there


class InputError(ValueError):
    """Bad arguments or input files (topology, plan, ranges), found before any long work: the
    dispatcher prints ``inart COMMAND: error: MESSAGE`` and exits 2."""


class RunFailed(RuntimeError):
    """A run that started and failed: the dispatcher prints ``inart COMMAND: error: MESSAGE``
    and exits 1."""


def warn(message: str) -> None:
    """One line on stderr, prefixed ``inart:`` (deprecations, notes)."""
    print(f"inart: {message}", file=sys.stderr)


# ---- names and lists --------------------------------------------------------------------


def scheme_groups(allowed: Sequence[str]) -> dict[str, list[str]]:
    """The named groups of ``allowed``: all (every one), ina (the planned INA schemes) and
    collectives (host-only all-reduce); a group with no member is left out."""
    allowed = list(allowed)
    collectives = [s for s in allowed if s in COLLECTIVE_SCHEMES]
    ina = [s for s in allowed if s not in COLLECTIVE_SCHEMES]
    groups = {"all": allowed, "ina": ina, "collectives": collectives}
    return {k: v for k, v in groups.items() if v}


class Names(list):
    """Names parsed from a comma list; ``grouped``: a group name (all, ina ...) was among
    them, so a command may leave out what a group cannot run at this size (the exact MILP)."""

    grouped = False


def names_of(allowed: Iterable[str], every: str | None = None,
             groups: dict[str, list[str]] | None = None) -> Callable[[str], list[str]]:
    """An argparse ``type``: ``a,b,c`` -> names, each one of ``allowed`` or a group name
    (``every`` names them all; ``groups`` maps more names to members); a bad list is an
    error of the option (exit status 2) that lists what is accepted."""
    allowed = list(allowed)
    groups = dict(groups or {})
    if every is not None:
        groups.setdefault(every, allowed)

    def parse(text: str) -> list[str]:
        names = Names()
        for t in (t.strip() for t in text.split(",")):
            if t:
                names += [n for n in groups.get(t, [t]) if n not in names]
                names.grouped = names.grouped or t in groups
        bad = [n for n in names if n not in allowed]
        if bad or not names:
            extra = f" or {', '.join(repr(g) for g in groups)}" if groups else ""
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected a comma-separated list of {', '.join(allowed)}{extra}"
                + (f" (unknown: {', '.join(bad)})" if bad else ""))
        return names

    return parse


def split_topologies(text: str) -> list[str]:
    """``fig1,leafspine:2,2,4,fattree:4`` -> the three specs: a comma separates specs, except
    before a bare number, which continues the spec before it (leafspine:L,S,H)."""
    specs: list[str] = []
    for token in (t.strip() for t in text.split(",")):
        if not token:
            continue
        if specs and token.isdigit() and ":" in specs[-1]:
            specs[-1] += "," + token
        else:
            specs.append(token)
    return specs


def topologies(text: str) -> list[str]:
    """argparse ``type`` of a -t list (see ``split_topologies``)."""
    specs = split_topologies(text)
    if not specs:
        raise argparse.ArgumentTypeError(f"{text!r}: expected TOPOLOGY[,TOPOLOGY...]")
    return specs


def parse_seed_spec(text: str) -> list[int]:
    """``3`` -> [3]; ``0-2`` -> [0, 1, 2]; ``0,3,5-6`` -> [0, 3, 5, 6] (ValueError naming the
    bad item)."""
    seeds: list[int] = []
    for item in (t.strip() for t in str(text).split(",")):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise ValueError(f"{item!r}: expected N, N-M (N <= M) or a comma list of those")
        seeds += [s for s in range(int(m[1]), int(m[2] or m[1]) + 1) if s not in seeds]
    return seeds


def seed_list(text: str) -> list[int]:
    """argparse ``type`` of --seeds."""
    try:
        return parse_seed_spec(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def positive(kind: type = float) -> Callable[[str], Any]:
    """argparse ``type``: a finite number > 0 (int or float)."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected {'an integer' if kind is int else 'a number'} > 0")
        return value

    parse.__name__ = f"positive {kind.__name__}"
    return parse


def load_plan(path: str | Path, flag: str = "--plan") -> Any:
    """An inart.plan/1 file as a Plan, or InputError (exit 2) naming the flag and the file:
    one check, before any run, for every command that takes a plan."""
    from control_plane.model.plan import Plan, PlanError

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{flag} {path}: no such file (expected an `inart plan` file)")
    try:
        return Plan.load(path)
    except (PlanError, OSError, ValueError) as exc:
        raise InputError(f"{flag} {path}: {exc}") from exc


def plan_files(text: str) -> list[Path]:
    """argparse ``type`` of --plan where several may be given (comma list, repeatable)."""
    return [Path(t.strip()) for t in text.split(",") if t.strip()]


# ---- the shared options -------------------------------------------------------------------


class _Extend(argparse.Action):
    """Repeatable list option: each occurrence's list is appended (the default replaced)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        current = getattr(namespace, self.dest, None)
        if current is None or current is self.default:
            current = []
        setattr(namespace, self.dest, [*current, *[v for v in values if v not in current]])


class _SpacedTopologies(argparse.Action):
    """The deprecated ``-t A B`` (a command's old space-separated list): the words after
    ``-t A`` land here and join -t's list, with one deprecation line."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if values:
            warn("-t A B is deprecated; use -t A,B")
            specs = [s for v in values for s in split_topologies(v)]
            parser._option_string_actions["-t"](parser, namespace, specs, "-t")


def add_topology(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *,
                 many: bool = False, default: str | None = "fig1",
                 help_text: str | None = None, legacy_spaces: bool = False) -> None:
    """``-t/--topology``: one spec, or (``many``) a comma list, repeatable.  ``legacy_spaces``
    also takes the deprecated space-separated form (`inart simulate`'s old syntax; for a
    command without positional arguments)."""
    specs = "fig1 | fattree:K | leafspine:L,S,H | irregular:SW,H | FILE.json/.yaml"
    if many:
        if legacy_spaces:
            parser.add_argument("legacy_topologies", nargs="*", action=_SpacedTopologies,
                                help=argparse.SUPPRESS)
        parser.add_argument("-t", "--topology", type=topologies, action=_Extend,
                            default=None if default is None else [default],
                            metavar="TOPOLOGY[,TOPOLOGY...]",
                            help=help_text or f"comma-separated, repeatable: {specs} "
                                              f"(default {default})")
    else:
        parser.add_argument("-t", "--topology", default=default, metavar="TOPOLOGY",
                            help=help_text or f"{specs} (default {default})")


def add_scheme(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
               allowed: Sequence[str], default: str, *, help_text: str = "") -> None:
    """``-s/--scheme``: a comma list of ``allowed``, or a group: all (every scheme this
    command runs), ina, collectives."""
    groups = scheme_groups(allowed)
    parser.add_argument("-s", "--scheme", default=names_of(allowed, groups=groups)(default),
                        type=names_of(allowed, groups=groups), metavar="SCHEME[,SCHEME...]",
                        help=(help_text + "; " if help_text else "") +
                        f"comma-separated from {', '.join(allowed)}, or "
                        f"{' | '.join(groups)} (default {default})")


def add_seeds(parser: argparse.ArgumentParser | argparse._ArgumentGroup, default: str = "0",
              help_text: str = "") -> None:
    """``--seeds SPEC``: N, N-M or a comma list of those (0-2 is three seeds)."""
    parser.add_argument("--seeds", type=seed_list, default=parse_seed_spec(default),
                        metavar="SEEDS",
                        help=(help_text + ": " if help_text else "seeds: ") +
                        f"N, N-M or a comma list (0-2 is 0, 1, 2; default {default})")


def add_plans(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--plan PLAN[,PLAN...]`` where a command takes several (repeatable), and the
    deprecated ``--plans``."""
    parser.add_argument("--plan", type=plan_files, action="extend", default=[],
                        metavar="PLAN[,PLAN...]", help=help_text)
    deprecate(parser, "--plans", "--plan")


def add_json(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
             what: str = "the results") -> None:
    """``--json [PATH]``: write ``what`` as JSON to PATH; no value or ``-``: print it."""
    parser.add_argument("--json", nargs="?", const=JSON_STDOUT, default=None, metavar="PATH",
                        help=f"write {what} as JSON to PATH (no PATH or '-': print it)")


def add_out(parser: argparse.ArgumentParser | argparse._ArgumentGroup, command: str,
            what: str = "the results") -> None:
    """``--out DIR`` (default out/COMMAND)."""
    from control_plane.repo import out_dir

    parser.add_argument("--out", type=Path, default=out_dir(command), metavar="DIR",
                        help=f"directory of {what} (default %(default)s)")


def add_quiet(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``-q/--quiet``: no progress output."""
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def deprecate(parser: argparse.ArgumentParser, old: str, new: str,
              spaces: bool = False) -> None:
    """Keep ``old`` working as ``new`` (hidden from --help) for one release: using it prints
    ``inart: OLD is deprecated; use NEW`` and stores what ``new`` would.  ``spaces``: the old
    option took space-separated values (``--models a b``), joined here into NEW's comma list."""
    real = parser._option_string_actions[new]

    class Alias(argparse.Action):
        replacement = new

        def __call__(self, p: argparse.ArgumentParser, namespace: argparse.Namespace,
                     values: Any, option_string: str | None = None) -> None:
            warn(f"{old} is deprecated; use {new}")
            if spaces:
                text = ",".join(values)
                try:
                    values = real.type(text) if real.type else text
                except argparse.ArgumentTypeError as exc:
                    p.error(f"argument {old}: {exc}")
            real(p, namespace, values, new)

    kwargs: dict[str, Any] = {"dest": real.dest, "nargs": real.nargs, "const": real.const,
                              "metavar": real.metavar, "default": argparse.SUPPRESS,
                              "help": argparse.SUPPRESS, "action": Alias}
    if spaces:
        kwargs["nargs"] = "+"
    elif real.nargs != 0:
        kwargs["type"] = real.type
    parser.add_argument(old, **kwargs)


def deprecated(parser: argparse.ArgumentParser) -> dict[str, str]:
    """old option -> new, of every ``deprecate``d option of ``parser`` (tests, docs)."""
    return {action.option_strings[0]: action.replacement for action in parser._actions
            if getattr(action, "replacement", None)}


# ---- outputs --------------------------------------------------------------------------------

_json_stream: Any = None  # the real stdout while `call` sends a command's other output to stderr
_all_quiet = False  # -q/--quiet of the running command: every progress bar of this process off


def call(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run a command; with ``--json -`` its other output goes to stderr, so stdout carries
    only the JSON (``write_json``) and pipes into jq as is; with -q/--quiet no progress bar of
    this process (or of a child it forks) shows, however deep it is made."""
    global _json_stream, _all_quiet
    _all_quiet = bool(getattr(args, "quiet", False))
    if getattr(args, "json", None) != JSON_STDOUT:
        return int(func(args) or 0)
    import contextlib

    _json_stream = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return int(func(args) or 0)
    finally:
        _json_stream = None


def write_json(dest: str | Path, data: Any) -> str:
    """``data`` as JSON to ``dest`` (``-``: stdout); returns where it went, for a message."""
    text = json.dumps(data, indent=1) + "\n"
    if str(dest) == JSON_STDOUT:
        (_json_stream or sys.stdout).write(text)
        (_json_stream or sys.stdout).flush()
        return "stdout"
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    Path(dest).write_text(text)
    return str(dest)


def write_json_line(dest: str | Path, data: Any) -> None:
    """One compact JSON line appended to ``dest`` (``-``: stdout), for streams (watch)."""
    text = json.dumps(data) + "\n"
    if str(dest) == JSON_STDOUT:
        (_json_stream or sys.stdout).write(text)
        (_json_stream or sys.stdout).flush()
    else:
        with open(dest, "a") as f:
            f.write(text)


def fresh_out(out: Path) -> Path:
    """Create OUT and remove the files the previous run listed in OUT/.inart-outputs, so a run
    never leaves an earlier run's results beside its own (other files stay)."""
    out.mkdir(parents=True, exist_ok=True)
    listing = out / OUTPUTS
    if listing.is_file():
        for name in listing.read_text().split("\n"):
            if name and "/" not in name and name not in (".", ".."):
                (out / name).unlink(missing_ok=True)
        listing.unlink()
    return out


def record_outputs(out: Path, files: Iterable[Path]) -> None:
    """List the files this run wrote into OUT (the next run's ``fresh_out`` removes them)."""
    names = sorted({Path(f).name for f in files if Path(f).parent.resolve() == out.resolve()})
    (out / OUTPUTS).write_text("".join(n + "\n" for n in names))


# ---- progress -------------------------------------------------------------------------------


def progress(iterable: Iterable[Any] | None = None, *, quiet: bool = False,
             interval_s: float = 30.0, **kwargs: Any) -> Any:
    """A tqdm bar on stderr: a live bar on a terminal; in a log (stderr not a terminal) a
    plain line at most every ``interval_s`` and at the end, never a carriage return; nothing
    with ``quiet``."""
    from tqdm import tqdm

    kwargs.setdefault("file", sys.stderr)
    if quiet or _all_quiet:
        kwargs["disable"] = True
    stream = kwargs["file"]
    if kwargs.get("disable") or (hasattr(stream, "isatty") and stream.isatty()):
        return tqdm(iterable, **kwargs)

    class LineBar(tqdm):
        """tqdm that prints whole lines (no \\r, no cursor moves) at most every interval."""

        def display(self, msg: str | None = None, pos: int | None = None) -> bool:
            if msg == "" or self.disable:  # tqdm clears a line so: nothing to clear here
                return False
            now = time.monotonic()
            done = self.total is not None and self.n >= self.total
            if msg is None and not done and now - getattr(self, "_last_line", -1e9) < interval_s:
                return True
            if done and getattr(self, "_printed_done", False):
                return True
            self._last_line, self._printed_done = now, done
            self.fp.write((msg or self.__str__()).strip() + "\n")
            self.fp.flush()
            return True

        def close(self) -> None:
            if not self.disable and not getattr(self, "_printed_done", False):
                self._last_line = -1e9
                self.display()
                self._printed_done = True
            super().close()

    kwargs["leave"] = False
    kwargs.pop("position", None)
    kwargs.setdefault("ascii", True)
    return LineBar(iterable, **kwargs)


# ---- parsers --------------------------------------------------------------------------------


def command(subparsers: argparse._SubParsersAction, name: str, help_text: str,
            doc: str | None) -> argparse.ArgumentParser:
    """A subcommand whose --help shows its module docstring as written (examples included)."""
    return subparsers.add_parser(name, help=help_text, description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)


def add_metrics(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                default: str | None = None) -> None:
    """``--metrics ADDRESS``: serve Prometheus metrics on /metrics there (HOST:PORT, port 0 any
    free one, printed; unix:PATH); ``off`` (or no option where ``default`` is None) serves
    none."""
    parser.add_argument("--metrics", default=default, metavar="ADDRESS",
                        type=lambda text: None if text == "off" else text,
                        help="serve Prometheus metrics on http://ADDRESS/metrics (HOST:PORT, "
                             "port 0: any free one, printed; unix:PATH; off: none)")
