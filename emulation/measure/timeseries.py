"""An emulation's metrics over time: every process it starts (embedded switches, PSs,
workers) serves /metrics on a Unix socket in one directory (bmv2 switches, which serve none,
are read over P4Runtime by this process instead) (their network namespaces reach no address of the
emulating process, its file system they share); ``Gatherer`` scrapes them all every
``interval_s``, appends each scrape to a JSON-lines file beside the results, and re-exports
the latest ones with a ``process`` label, so Prometheus scrapes one address per emulation.

One line per process and scrape: ``{"t": UNIX_TIME, "process": "v1", "samples":
{"NAME{label=\"v\",...}": VALUE, ...}}``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from control_plane.observe.exporter import UNIX, MetricsError, scrape_text

SOCKET_SUFFIX = ".sock"
INTERVAL_S = 1.0


def socket_address(directory: Path, process: str) -> str:
    """The metrics address of ``process`` (a switch or host name) under ``directory``."""
    return f"{UNIX}{directory / (process + SOCKET_SUFFIX)}"


def sample_key(name: str, labels: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}" if inner else name


class Gatherer(Collector):
    """Scrapes every socket of ``directory`` in a thread until ``close``."""

    def __init__(self, directory: Path, out: Path, interval_s: float = INTERVAL_S,
                 local: dict[str, CollectorRegistry] | None = None) -> None:
        """``local``: process name -> a registry of this process scraped alongside (the
        metrics of switches read over P4Runtime, which serve none themselves)."""
        self.directory, self.out, self.interval_s = directory, out, interval_s
        self.local = dict(local or {})
        directory.mkdir(parents=True, exist_ok=True)
        self.latest: dict[str, str] = {}  # process -> its last exposition text
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.active = threading.Event()  # cleared: the loop scrapes nothing (pause/resume)
        self.active.set()
        self.scrapes = 0
        self.thread = threading.Thread(target=self._loop, name="metrics-gatherer", daemon=True)
        self.registry = CollectorRegistry()
        self.registry.register(self)

    def start(self) -> Gatherer:
        self.thread.start()
        return self

    def close(self) -> None:
        self.stopping.set()
        if self.thread.ident is not None:
            self.thread.join(timeout=10)
        self.gather()  # the last values, after the processes' final rounds

    def _loop(self) -> None:
        while not self.stopping.wait(self.interval_s):
            if self.active.is_set():
                self.gather()

    def gather(self) -> int:
        """Scrape every process once; returns how many answered."""
        now, texts = time.time(), {}
        for sock in sorted(self.directory.glob(f"*{SOCKET_SUFFIX}")):
            try:
                texts[sock.name[:-len(SOCKET_SUFFIX)]] = scrape_text(f"{UNIX}{sock}", 2.0)
            except MetricsError:  # a process that ended, or not serving yet
                continue
        for process, registry in self.local.items():
            texts[process] = generate_latest(registry).decode()
        lines = []
        for process, text in texts.items():
            samples = {sample_key(s.name, s.labels): s.value
                       for family in text_string_to_metric_families(text)
                       for s in family.samples}
            lines.append(json.dumps({"t": now, "process": process, "samples": samples}))
        with self.lock:
            self.latest.update(texts)
            self.scrapes += 1
            if lines:
                with self.out.open("a") as f:
                    f.write("\n".join(lines) + "\n")
        return len(texts)

    def latest_values(self, name: str) -> dict[str, float]:
        """Process -> the sum of sample ``name`` in its latest scrape (those that have it)."""
        with self.lock:
            latest = dict(self.latest)
        out = {}
        for process, text in latest.items():
            found = [s.value for family in text_string_to_metric_families(text)
                     for s in family.samples if s.name == name]
            if found:
                out[process] = sum(found)
        return out

    def forget(self) -> None:
        """Drop the latest scrapes (a new run's processes start from nothing)."""
        with self.lock:
            self.latest.clear()

    def collect(self) -> Iterator[Metric]:
        """The latest scrape of every process, each sample labelled with its process."""
        with self.lock:
            latest = dict(self.latest)
        merged: dict[str, Metric] = {}
        for process, text in sorted(latest.items()):
            for family in text_string_to_metric_families(text):
                out = merged.setdefault(family.name, Metric(family.name,
                                                            family.documentation,
                                                            family.type))
                for s in family.samples:
                    out.add_sample(s.name, {"process": process, **s.labels}, s.value)
        yield from merged.values()


def read_series(path: Path) -> list[dict]:
    """The lines a Gatherer wrote."""
    return [json.loads(line) for line in path.read_text().splitlines() if line]
