"""MkDocs hook: the CLI reference page, rendered from the argparse parsers at build time.

The page is generated, never committed, so it cannot drift from the parsers: every command of
``control_plane.cli.main.COMMANDS`` (through its module's ``register``), every subcommand of
those (``inart ctl topology`` ...), and every benchmark and experiment (their modules'
``configure``) gets its ``--help`` text.  ``render()`` is also what tests/test_docs.py checks.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = "reference/cli.md"
WIDTH = "80"  # columns of the rendered help: fits the guide's content column (no scrollbar)
# `inart NAME KIND [ARGS]` commands whose kinds are parsers of their own:
# command -> (module, registry of kind -> (module exposing configure(parser), one-line help))
REGISTRIES = {
    "bench": ("control_plane.cli.main", "BENCHMARKS"),
    "experiment": ("host_stack.cli.experiment", "EXPERIMENTS"),
}

INTRO = """# CLI reference

Every `inart` command and subcommand with its `--help`, generated from the parsers when this
guide is built (`docs/hooks/cli_reference.py`). The same text is printed by
`inart COMMAND --help`, `inart bench NAME --help` and `inart experiment NAME --help`.
"""


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of each subcommand of ``parser``, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _section(level: int, title: str, parser: argparse.ArgumentParser) -> str:
    return f"{'#' * level} `{title}`\n\n```text\n{parser.format_help().rstrip()}\n```\n"


def _walk(level: int, title: str, parser: argparse.ArgumentParser) -> Iterator[str]:
    yield _section(level, title, parser)
    for name, child in _subparsers(parser):
        yield from _walk(level + 1, f"{title} {name}", child)


def render() -> str:
    """The whole page: ``inart``, each command and its subcommands, benchmarks, experiments."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from control_plane.cli.main import COMMANDS, load_register

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        top = argparse.ArgumentParser(
            prog="inart", description="In-network aggregation testbed with P4 switches.")
        sub = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
        for module, _ in COMMANDS.values():
            load_register(module)(sub)
        parts = [INTRO, _section(2, "inart", top)]
        for name, parser in _subparsers(top):
            parts.extend(_walk(2, f"inart {name}", parser))
            if name in REGISTRIES:
                module, attribute = REGISTRIES[name]
                registry = getattr(importlib.import_module(module), attribute)
                for kind, (kind_module, help_text) in registry.items():
                    kind_parser = argparse.ArgumentParser(prog=f"inart {name} {kind}",
                                                          description=help_text)
                    importlib.import_module(kind_module).configure(kind_parser)
                    parts.append(_section(3, f"inart {name} {kind}", kind_parser))
        # the help blocks sit in one div, so the guide's CSS wraps their long lines there only
        return "\n".join([parts[0], '<div class="cli-help" markdown>\n', *parts[1:], "</div>\n"])
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def on_files(files, config):  # noqa: ANN001, ANN201 (MkDocs hook signature)
    """Add the generated page to the site."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=render()))
    return files
