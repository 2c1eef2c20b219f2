"""The readable resource report of a Tofino build, cut from the compiler's own logs.

bf-p4c (with ``-g``) writes ``pipe/logs/mau.resources.log`` (per MAU stage: crossbar bytes,
hash bits and hash distribution units, gateways, SRAM, map RAM, TCAM, VLIW slots, meter
(stateful) and stats ALUs, buses; counts, then percentages), a PHV allocation summary and
``metrics.json`` (totals).  The report keeps those tables as the compiler printed them, with
one line on top saying how many of the 12 stages the program takes, so a reviewer sees in one
file whether it fits one pipe and what is tight.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

TOFINO1_STAGES = 12
_STAGE_ROW = re.compile(r"^\|\s+(\d+)\s+\|")


class ResourceError(RuntimeError):
    """The compiler's logs are missing or not in the expected shape."""


@dataclass(frozen=True)
class ResourceReport:
    stages_used: int
    mau_tables: str  # the per-stage tables of mau.resources.log
    phv_summary: str  # the usage lines of the PHV allocation summary
    totals: dict

    @property
    def fits(self) -> bool:
        return self.stages_used <= TOFINO1_STAGES

    def text(self) -> str:
        mau = self.totals.get("mau", {})
        phv = {p["bit_width"]: p["containers_occupied"]
               for p in self.totals.get("phv", {}).get("normal", [])}
        latency = ", ".join(f"{x['gress']} {x['cycles']} cycles" for x in mau.get("latency", []))
        lines = [
            "inart TNA build: resources (cut from bf-p4c's pipe/logs/mau.resources.log, "
            "phv_allocation_summary_*.log, metrics.json)",
            f"compiler: {self.totals.get('compiler_version', '?')}, target "
            f"{self.totals.get('target', '?')}",
            f"fits one pipe: {'yes' if self.fits else 'NO'} ({self.stages_used} of "
            f"{TOFINO1_STAGES} MAU stages, ingress and egress together)",
            f"totals: SRAM {mau.get('srams')}, TCAM {mau.get('tcams')}, map RAM "
            f"{mau.get('map_rams')}, logical tables {mau.get('logical_tables')}, exact/ternary "
            f"crossbar bytes {mau.get('exact_crossbar_bytes')}/"
            f"{mau.get('ternary_crossbar_bytes')}, action bus bytes "
            f"{mau.get('action_bus_bytes')}; latency {latency}",
            f"PHV containers (normal): 8-bit {phv.get(8)}/64, 16-bit {phv.get(16)}/96, "
            f"32-bit {phv.get(32)}/64",
            "",
            "Per MAU stage (Meter ALU = stateful ALUs, 4 per stage; Hash Dist Unit = hash "
            "distribution units, 6 per stage):",
            self.mau_tables,
            "",
            "PHV usage (ingress and egress share the containers):",
            self.phv_summary,
        ]
        return "\n".join(lines) + "\n"


def _mau_tables(text: str) -> tuple[str, int]:
    """The count and percentage tables of mau.resources.log, and the stages they list."""
    start = text.find("| Stage Number")
    end = text.find("Allocated Resource Usage")
    if start < 0 or end < 0:
        raise ResourceError("mau.resources.log has no per-stage table")
    block = text[text.rfind("\n", 0, start - 2) + 1:end].rstrip()
    first = block.split("Totals")[0]
    stages = {int(m.group(1)) for line in first.splitlines() if (m := _STAGE_ROW.match(line))}
    if not stages:
        raise ResourceError("mau.resources.log lists no stage")
    return block, max(stages) + 1


def _phv_summary(logs: Path) -> str:
    files = sorted(logs.glob("phv_allocation_summary_*.log"),
                   key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
    if not files:
        raise ResourceError(f"no phv_allocation_summary_*.log in {logs}")
    keep = [line for line in files[-1].read_text().splitlines()
            if line.startswith(("|   Usage for", "| Overall PHV Usage"))]
    return "\n".join(keep)


def read_report(pipe_dir: Path) -> ResourceReport:
    """The report of the build whose pipe directory (``<out>/pipe``) is ``pipe_dir``."""
    logs = pipe_dir / "logs"
    try:
        mau_text = (logs / "mau.resources.log").read_text()
        totals = json.loads((logs / "metrics.json").read_text())
    except OSError as exc:
        raise ResourceError(f"{exc.filename}: {exc.strerror} (compile with -g)") from None
    block, stages = _mau_tables(mau_text)
    return ResourceReport(stages, block, _phv_summary(logs), totals)


def stage_map(context: dict) -> dict[str, set[int]]:
    """Every table, register (stateful table) and counter of a compiled program (bf-p4c's
    ``pipe/context.json``) -> the MAU stages it was placed in, so docs and comments can be
    checked against the compiler's placement rather than kept by hand."""
    stages: dict[str, set[int]] = {}
    for table in context.get("tables", []):
        attrs = table.get("match_attributes")
        rows = attrs.get("stage_tables", []) if isinstance(attrs, dict) else []
        rows = rows or table.get("stage_tables", [])
        found = {row["stage_number"] for row in rows if row.get("stage_number", -1) >= 0}
        if found:
            stages.setdefault(table["name"], set()).update(found)
    return stages
