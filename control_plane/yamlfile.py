"""Reading the YAML files users write by hand (topologies, inventories, servers files, sweep
grids, Tofino port maps): one reader, so every such file's errors name the file, and a syntax
error its line and column, alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def read_yaml(path: str | Path, what: str, error: type[Exception]) -> Any:
    """The document in ``path`` (YAML, so JSON too); ``error`` with a message that starts
    with ``what`` and the path when the file cannot be read or is not YAML."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise error(f"{what} {path}: cannot read it ({exc.strerror})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{what} {path}: not valid YAML ({at}{problem})") from None
