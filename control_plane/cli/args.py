"""Command-line pieces every part's commands share (the dispatcher's modules import these, so
a comma list or a subcommand's help reads the same in `inart plan`, `emulate`, `bench` ...)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable


def names_of(allowed: Iterable[str], every: str | None = None) -> Callable[[str], list[str]]:
    """An argparse ``type``: ``a,b,c`` -> names, each one of ``allowed`` (argparse reports a
    bad list as an error of the option, exit status 2); ``every`` (e.g. "all") names them all."""
    allowed = list(allowed)

    def parse(text: str) -> list[str]:
        if every is not None and text.strip() == every:
            return list(allowed)
        names = [t.strip() for t in text.split(",") if t.strip()]
        bad = [n for n in names if n not in allowed]
        if bad or not names:
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected a comma-separated list of {', '.join(allowed)}"
                + (f" or {every!r}" if every is not None else "")
                + (f" (unknown: {', '.join(bad)})" if bad else ""))
        return names

    return parse


def command(subparsers: argparse._SubParsersAction, name: str, help_text: str,
            doc: str | None) -> argparse.ArgumentParser:
    """A subcommand whose --help shows its module docstring as written (examples included)."""
    return subparsers.add_parser(name, help=help_text, description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
