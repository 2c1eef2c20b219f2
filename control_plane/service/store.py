"""The service's state on disk (SQLite, stdlib): what a restarted service needs to carry on.

One file, ``DIR/state.sqlite``: the registered network and its modifiers, the jobs, every
plan version that is still installed (with its plan as ``inart.plan/1``), the hosts' progress,
an event log and the last Watch messages (so sequence numbers go on across restarts and a
client that reconnects with ``since`` gets what it missed, the restart included).  The
switches' entries are *not* stored: they follow from these and are recompiled and
reconciled against what the switches hold on start.  Every change is one transaction, so a
crash leaves the last complete state.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS network (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    topology TEXT NOT NULL, switches TEXT NOT NULL, modifiers TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS versions (
    job INTEGER NOT NULL, number INTEGER NOT NULL, body TEXT NOT NULL, plan TEXT NOT NULL,
    PRIMARY KEY (job, number));
CREATE TABLE IF NOT EXISTS progress (
    job INTEGER NOT NULL, participant TEXT NOT NULL, round INTEGER NOT NULL,
    PRIMARY KEY (job, participant));
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS watch (
    seq INTEGER PRIMARY KEY, message BLOB NOT NULL);
"""


class Store:
    """Thread-safe access to the state file."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / "state.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self.lock = threading.Lock()

    def _tx(self, statements: list[tuple[str, tuple]]) -> int | None:
        """Run statements in one transaction; returns the last row id."""
        with self.lock:
            cur = self.db.cursor()
            cur.execute("BEGIN")
            try:
                for sql, args in statements:
                    cur.execute(sql, args)
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")
            return cur.lastrowid

    def _all(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self.lock:
            return self.db.execute(sql, args).fetchall()

    # -- network -----------------------------------------------------------------------------
    def save_network(self, topology: dict, switches: dict, modifiers: dict,
                     clear_jobs: bool = False) -> None:
        stmts = [("INSERT OR REPLACE INTO network VALUES (1, ?, ?, ?)",
                  (json.dumps(topology), json.dumps(switches), json.dumps(modifiers)))]
        if clear_jobs:
            stmts += [("DELETE FROM versions", ()), ("DELETE FROM progress", ())]
        self._tx(stmts)

    def load_network(self) -> tuple[dict, dict, dict] | None:
        rows = self._all("SELECT topology, switches, modifiers FROM network")
        return tuple(json.loads(v) for v in rows[0]) if rows else None  # type: ignore[return-value]

    def save_modifiers(self, modifiers: dict) -> None:
        self._tx([("UPDATE network SET modifiers = ?", (json.dumps(modifiers),))])

    # -- jobs --------------------------------------------------------------------------------
    def new_job(self, body: dict) -> int:
        job_id = self._tx([("INSERT INTO jobs (body) VALUES (?)", (json.dumps(body),))])
        assert job_id is not None
        return job_id

    def save_job(self, job_id: int, body: dict,
                 versions: Sequence[tuple[int, dict, str]] = ()) -> None:
        """A job's record and the versions given (number, body, plan JSON), in one
        transaction."""
        stmts = [("UPDATE jobs SET body = ? WHERE id = ?", (json.dumps(body), job_id))]
        stmts += [("INSERT OR REPLACE INTO versions VALUES (?, ?, ?, ?)",
                   (job_id, n, json.dumps(b), plan)) for n, b, plan in versions]
        self._tx(stmts)

    def drop_job_state(self, job_id: int, body: dict) -> None:
        """A cancelled job keeps its record; its versions and progress go."""
        self._tx([("UPDATE jobs SET body = ? WHERE id = ?", (json.dumps(body), job_id)),
                  ("DELETE FROM versions WHERE job = ?", (job_id,)),
                  ("DELETE FROM progress WHERE job = ?", (job_id,))])

    def jobs(self) -> list[tuple[int, dict]]:
        return [(i, json.loads(b)) for i, b in self._all("SELECT id, body FROM jobs ORDER BY id")]

    def versions(self, job_id: int) -> list[tuple[int, dict, str]]:
        return [(n, json.loads(b), p) for n, b, p in self._all(
            "SELECT number, body, plan FROM versions WHERE job = ? ORDER BY number", (job_id,))]

    def save_progress(self, job_id: int, participant: str, round_: int) -> None:
        self._tx([("INSERT OR REPLACE INTO progress VALUES (?, ?, ?)",
                   (job_id, participant, round_))])

    def progress(self, job_id: int) -> dict[str, int]:
        return dict(self._all("SELECT participant, round FROM progress WHERE job = ?",
                              (job_id,)))

    # -- events ------------------------------------------------------------------------------
    def log_event(self, time: float, body: dict[str, Any]) -> int:
        event_id = self._tx([("INSERT INTO events (time, body) VALUES (?, ?)",
                              (time, json.dumps(body)))])
        assert event_id is not None
        return event_id

    def event_count(self) -> int:
        return int(self._all("SELECT COUNT(*) FROM events")[0][0])

    # -- Watch messages ----------------------------------------------------------------------
    def save_watch(self, seq: int, message: bytes, keep: int) -> None:
        """Keep Watch message ``seq`` (serialised) and the ``keep`` - 1 before it."""
        self._tx([("INSERT OR REPLACE INTO watch VALUES (?, ?)", (seq, message)),
                  ("DELETE FROM watch WHERE seq <= ?", (seq - keep,))])

    def watch_messages(self) -> list[tuple[int, bytes]]:
        """The kept Watch messages (seq, serialised), oldest first."""
        return self._all("SELECT seq, message FROM watch ORDER BY seq")

    def close(self) -> None:
        with self.lock:
            self.db.close()
