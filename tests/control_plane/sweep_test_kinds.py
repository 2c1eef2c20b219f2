"""A run kind for the sweep's tests, imported by Ray's workers (the test puts this directory
on PYTHONPATH): it counts its attempts in the point's directory, kills its own worker process
for the seeds in settings["die_seeds"] (what a segfault or the OOM killer does), raises for
the scheme "bad", and otherwise returns the seed times ten."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def run(point: dict[str, Any], settings: dict[str, Any], out: str) -> dict[str, Any]:
    with (Path(out) / "attempts").open("a") as f:
        f.write(f"{os.getpid()}\n")
    if point["seed"] in settings.get("die_seeds", []):
        os._exit(3)
    if point["scheme"] == "bad":
        raise ValueError(f"scheme bad cannot run on {point['topology']}")
    return {"value": point["seed"] * 10}
