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


class Fields:
    """Reads one mapping of a hand-written file, naming the file and ``where`` in every error.

    Subclasses set ``what`` (the kind of file, first word of each message) and ``error_type``.
    """

    what = "file"
    error_type: type[Exception] = ValueError

    def __init__(self, path: Path, where: str, doc: object, known: tuple[str, ...]) -> None:
        self.path, self.where = path, where
        if not isinstance(doc, dict):
            raise self.error("", f"expected a mapping, got {type(doc).__name__}")
        unknown = sorted(str(k) for k in doc if k not in known)
        if unknown:
            raise self.error(unknown[0], f"unknown field (known: {', '.join(known)})")
        self.doc = doc

    def error(self, name: str, expected: str) -> Exception:
        at = ".".join(p for p in (self.where, name) if p)
        return self.error_type(f"{self.what} {self.path}: {at or 'top level'}: {expected}")

    def text(self, name: str, default: str | None = None, choices: tuple[str, ...] = ()
             ) -> str | None:
        value = self.doc.get(name, default)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise self.error(name, f"{value!r}: expected a non-empty string")
        if choices and value not in choices:
            raise self.error(name, f"{value!r}: expected one of {', '.join(choices)}")
        return value

    def required(self, name: str, choices: tuple[str, ...] = ()) -> str:
        value = self.text(name, choices=choices)
        if value is None:
            raise self.error(name, "missing (required)")
        return value

    def integer(self, name: str, default: int | None, low: int, high: int) -> int | None:
        value = self.doc.get(name, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.error(name, f"{value!r}: expected an integer {low}..{high}")
        return value
