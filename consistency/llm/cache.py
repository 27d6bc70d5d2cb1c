"""A persistent response cache in SQLite, shared safely by concurrent runs and processes.

The key is a hash of what determines an answer: the model's identity (endpoint and name),
the messages, the generation parameters and the response schema; never concurrency,
timeouts or retry settings. Only answers that validated are stored, so re-running a run
repeats no successful call, and a hit returns the same parsed object as the original call.
WAL mode lets several processes read and write at once. Answers stored from inside an event
loop are written together at the loop's next turn, one transaction for all of them: when a batch
of tens of thousands of answers arrives at once, one commit each would cost more than the rest of
their handling.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..paths import cache_dir

log = logging.getLogger(__name__)
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def cache_key(identity: str, messages: list[dict[str, Any]], params: dict[str, Any], schema: Any) -> str:
    payload = json.dumps([identity, messages, params, schema], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass
class CacheStats:
    path: str
    entries: int
    size_bytes: int
    last_run: dict[str, Any] | None


class ResponseCache:
    """One SQLite file; safe to share between threads of a process and between processes.

    The cache only ever saves time, so it never stops a run: a file that is not a database (or
    a damaged one) is moved aside as ``responses.sqlite.corrupt-<time>`` with one warning and a
    fresh cache takes its place; a database locked by another process is waited for.
    """

    FILENAME = "responses.sqlite"
    #: Seconds to wait for another process's lock before giving up on one read or write.
    BUSY_TIMEOUT = 120.0

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else cache_dir() / self.FILENAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.moved_aside: Path | None = None
        self._complained = False
        self.hits = 0
        self.misses = 0
        self._pending: dict[str, tuple[str, str, str, float]] = {}  # key -> row, written at the loop's next turn
        with self._lock:
            self._guarded(self._connect)

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            db = sqlite3.connect(self.path, timeout=self.BUSY_TIMEOUT, check_same_thread=False, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(_SCHEMA)
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    def _guarded(self, operation: Callable[[], T]) -> T:
        """Run ``operation`` (under ``self._lock``); on a damaged file, set it aside and run it on a fresh one."""
        try:
            return operation()
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
        # Another process may be creating the file at this moment (its header not yet written): look
        # again on a fresh connection before calling the file damaged and moving it aside.
        self._reconnect_after(0.25)
        try:
            return operation()
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            self._set_aside(exc)
            return operation()

    def _reconnect_after(self, seconds: float) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        time.sleep(seconds)

    def _tolerant(self, operation: Callable[[], T], what: str) -> T | None:
        """For a run's reads and writes: a cache that cannot be used (still locked after
        :attr:`BUSY_TIMEOUT`, a full disk) costs a model call, not the run."""
        try:
            return self._guarded(operation)
        except sqlite3.Error as exc:
            if not self._complained:
                log.warning("cannot %s the response cache %s (%s); going on without it", what, self.path, exc)
                self._complained = True
            return None

    def _set_aside(self, exc: sqlite3.DatabaseError) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        self.path.replace(target)
        for suffix in ("-wal", "-shm"):  # a journal belongs to the file it journals
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                side.replace(target.with_name(target.name + suffix))
        self.moved_aside = target
        log.warning(
            "response cache %s is unreadable (%s): moved it to %s and started a fresh cache", self.path, exc, target
        )
        self._connect()

    def get(self, key: str) -> dict[str, Any] | None:
        def read() -> Any:
            return self._connect().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()

        with self._lock:
            pending = self._pending.get(key)
            row = (pending[2],) if pending else self._tolerant(read, "read")
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def recent(self, model: str, limit: int = 2000) -> list[dict[str, Any]]:
        """The latest ``limit`` answers stored for ``model`` (an endpoint identity), newest first: what a cost
        estimate learns a model's typical answer length from. Never counted as hits or misses."""

        def read() -> Any:
            return (
                self._connect()
                .execute("SELECT value FROM responses WHERE model = ? ORDER BY created DESC LIMIT ?", (model, limit))
                .fetchall()
            )

        with self._lock:
            rows = self._tolerant(read, "read") or []
        return [json.loads(row[0]) for row in rows]

    def put(self, key: str, model: str, value: dict[str, Any]) -> None:
        row = (key, model, json.dumps(value, ensure_ascii=False), time.time())
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            first = not self._pending
            self._pending[key] = row
        if loop is None:
            self.flush()
        elif first:
            loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write the answers stored since the last flush, in one transaction."""
        with self._lock:
            rows = list(self._pending.values())
            if not rows:
                return

            def write() -> None:
                db = self._connect()
                db.execute("BEGIN IMMEDIATE")
                try:
                    db.executemany(
                        "INSERT OR REPLACE INTO responses (key, model, value, created) VALUES (?, ?, ?, ?)", rows
                    )
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")

            self._tolerant(write, "write")
            self._pending.clear()  # written, or (a cache that cannot be used) given up as the run goes on

    def record_run(self) -> None:
        """Remember this run's hits and misses for ``cc cache stats`` (if it used the cache)."""
        self.flush()
        if not self.hits + self.misses:
            return
        run = {"hits": self.hits, "misses": self.misses, "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

        def write() -> None:
            self._connect().execute(
                "INSERT OR REPLACE INTO meta (name, value) VALUES ('last_run', ?)", (json.dumps(run),)
            )

        with self._lock:
            self._tolerant(write, "write")

    def stats(self) -> CacheStats:
        self.flush()

        def read() -> tuple[int, Any]:
            db = self._connect()
            entries = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            return entries, db.execute("SELECT value FROM meta WHERE name = 'last_run'").fetchone()

        with self._lock:
            entries, row = self._guarded(read)
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        size -= sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + ".corrupt-*") if p.is_file())
        return CacheStats(str(self.path), entries, size, json.loads(row[0]) if row else None)

    def clear(self) -> int:
        def wipe() -> int:
            self._pending.clear()
            db = self._connect()
            n = db.execute("DELETE FROM responses").rowcount
            db.execute("DELETE FROM meta")
            db.execute("VACUUM")
            return n

        with self._lock:
            return self._guarded(wipe)

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite's error means the file itself is bad (not a lock, a full disk or a permission)."""
    text = str(exc).lower()
    return type(exc) is sqlite3.DatabaseError or "not a database" in text or "malformed" in text
