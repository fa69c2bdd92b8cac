"""The SQLite event log and thread store: one file, embedded, surviving a restart.

Both use the standard library's :mod:`sqlite3` in WAL mode. Calls run on the
event loop's thread: each is one short transaction (an append of a run's frame
commits without waiting for the disk, ``synchronous=NORMAL``; a process crash
loses nothing committed, a power cut may lose the last commits). Readers waiting
for a stream to grow are woken by appends made through the same object, and
look again every ``poll`` seconds for appends made by another process.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from agentproto._core.errors import StoreError, UsageError, chained
from agentproto._core.store.log import (
    Bell,
    Entry,
    Page,
    Retention,
    check_position,
    cursor_of,
    position_of,
    read_waiting,
    unknown,
)

__all__ = ["SQLiteEventLog", "SQLiteThreadStore"]

_T = TypeVar("_T")

_LOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentproto_streams (
    name TEXT PRIMARY KEY,
    first INTEGER NOT NULL,   -- the oldest position held
    last INTEGER NOT NULL,    -- the newest position (first - 1 when none is held)
    ended INTEGER NOT NULL,
    touched REAL NOT NULL     -- time.time() of the last append
);
CREATE INDEX IF NOT EXISTS agentproto_streams_touched ON agentproto_streams (touched);
CREATE TABLE IF NOT EXISTS agentproto_frames (
    stream TEXT NOT NULL,
    position INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (stream, position)
) WITHOUT ROWID;
"""

_THREAD_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentproto_threads (
    thread TEXT NOT NULL,
    seq INTEGER NOT NULL,
    record BLOB NOT NULL,
    PRIMARY KEY (thread, seq)
) WITHOUT ROWID;
"""


class _Database:
    """One SQLite connection, every failure turned into :class:`StoreError`."""

    def __init__(self, path: str | Path, schema: str) -> None:
        self.path = str(path)
        self._db: sqlite3.Connection | None = None
        self._schema = schema

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("PRAGMA busy_timeout=5000")
                db.executescript(self._schema)
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    def run(self, operation: str, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """``work(connection)`` in one transaction; a database error is a StoreError."""
        try:
            db = self._connect()
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            raise chained(StoreError(operation, f"SQLite ({self.path}): {exc}"), exc) from exc

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class SQLiteEventLog:
    """An :class:`~agentproto.stores.EventLog` in one SQLite file.

    Args:
        path: the database file (created when missing; ``":memory:"`` for a
            private database that lives as long as this object).
        retention: what is kept (``max_streams`` does not apply: a file holds
            as many streams as the disk does).
        poll: seconds between looks for frames another process appended, while
            a reader waits.
    """

    def __init__(
        self, path: str | Path, *, retention: Retention | None = None, poll: float = 0.25
    ) -> None:
        self.retention = retention or Retention()
        self.poll = poll
        self._db = _Database(path, _LOG_SCHEMA)
        self._bell = Bell()

    def _expire(self, db: sqlite3.Connection) -> None:
        if self.retention.max_age is None:
            return
        horizon = time.time() - self.retention.max_age
        old = [
            row[0]
            for row in db.execute(
                "SELECT name FROM agentproto_streams WHERE touched < ?", (horizon,)
            )
        ]
        for name in old:
            db.execute("DELETE FROM agentproto_frames WHERE stream = ?", (name,))
            db.execute("DELETE FROM agentproto_streams WHERE name = ?", (name,))

    async def append(self, stream: str, frames: Sequence[bytes], *, end: bool = False) -> list[str]:
        """See :meth:`EventLog.append <agentproto.stores.EventLog.append>`."""
        data = [bytes(frame) for frame in frames]

        def work(db: sqlite3.Connection) -> int:
            row = db.execute(
                "SELECT first, last, ended FROM agentproto_streams WHERE name = ?", (stream,)
            ).fetchone()
            first, last, ended = row if row is not None else (1, 0, 0)
            if ended:
                raise UsageError("store.stream-ended", f"{stream!r} was ended: no frame may follow")
            db.executemany(
                "INSERT INTO agentproto_frames (stream, position, data) VALUES (?, ?, ?)",
                [(stream, last + 1 + i, frame) for i, frame in enumerate(data)],
            )
            new_last = last + len(data)
            cap = self.retention.max_frames
            if cap is not None and new_last - first + 1 > cap:
                first = new_last - cap + 1
                db.execute(
                    "DELETE FROM agentproto_frames WHERE stream = ? AND position < ?",
                    (stream, first),
                )
            db.execute(
                "INSERT OR REPLACE INTO agentproto_streams (name, first, last, ended, touched)"
                " VALUES (?, ?, ?, ?, ?)",
                (stream, first, new_last, int(end), time.time()),
            )
            self._expire(db)
            return last + 1

        start = self._db.run("append", work)
        self._bell.ring(stream)
        return [cursor_of(stream, start + i) for i in range(len(data))]

    def _page(self, stream: str, after: int, limit: int) -> Page:
        def work(db: sqlite3.Connection) -> tuple[Any, list[Any]]:
            self._expire(db)
            row = db.execute(
                "SELECT first, last, ended FROM agentproto_streams WHERE name = ?", (stream,)
            ).fetchone()
            if row is None:
                return None, []
            rows = db.execute(
                "SELECT position, data FROM agentproto_frames WHERE stream = ? AND position > ?"
                " ORDER BY position LIMIT ?",
                (stream, after, limit),
            ).fetchall()
            return row, rows

        row, rows = self._db.run("read", work)
        if row is None:
            raise unknown(stream, after)
        first, last, ended = row
        check_position(stream, after, first, last)
        entries = tuple(Entry(cursor_of(stream, pos), bytes(data)) for pos, data in rows)
        position = after + len(entries)
        cursor = cursor_of(stream, position) if position else None
        return Page(entries, bool(ended) and position == last, cursor)

    async def read(
        self, stream: str, after: str | None = None, *, limit: int = 1000, wait: float = 0.0
    ) -> Page:
        """See :meth:`EventLog.read <agentproto.stores.EventLog.read>`."""
        position = position_of(stream, after)
        page = partial(self._page, stream, position, limit)
        return await read_waiting(page, self._bell, stream, wait, self.poll)

    async def drop(self, stream: str) -> None:
        """See :meth:`EventLog.drop <agentproto.stores.EventLog.drop>`."""

        def work(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM agentproto_frames WHERE stream = ?", (stream,))
            db.execute("DELETE FROM agentproto_streams WHERE name = ?", (stream,))

        self._db.run("drop", work)
        self._bell.ring(stream)

    async def aclose(self) -> None:
        """Close the database connection."""
        self._db.close()


class SQLiteThreadStore:
    """A :class:`~agentproto.stores.ThreadStore` in one SQLite file (it may be the
    event log's)."""

    def __init__(self, path: str | Path) -> None:
        self._db = _Database(path, _THREAD_SCHEMA)

    async def add(self, thread: str, record: bytes) -> None:
        """See :meth:`ThreadStore.add <agentproto.stores.ThreadStore.add>`."""

        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO agentproto_threads (thread, seq, record) VALUES (?, "
                "(SELECT COALESCE(MAX(seq), 0) + 1 FROM agentproto_threads WHERE thread = ?), ?)",
                (thread, thread, bytes(record)),
            )

        self._db.run("add", work)

    async def records(self, thread: str) -> list[bytes]:
        """See :meth:`ThreadStore.records <agentproto.stores.ThreadStore.records>`."""

        def work(db: sqlite3.Connection) -> list[bytes]:
            rows = db.execute(
                "SELECT record FROM agentproto_threads WHERE thread = ? ORDER BY seq", (thread,)
            )
            return [bytes(row[0]) for row in rows]

        return self._db.run("records", work)

    async def drop(self, thread: str) -> None:
        """See :meth:`ThreadStore.drop <agentproto.stores.ThreadStore.drop>`."""
        self._db.run(
            "drop",
            lambda db: db.execute("DELETE FROM agentproto_threads WHERE thread = ?", (thread,)),
        )

    async def aclose(self) -> None:
        """Close the database connection."""
        self._db.close()
