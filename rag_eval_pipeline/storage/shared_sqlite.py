"""One SQLite cache file on a local disk shared by concurrent processes (parallel runs and steps).

`SharedDatabase` opens it in WAL mode with a busy timeout, so readers and a writer proceed
together and writers wait for each other instead of failing, and applies the schema. Processes
set a database up one at a time (a `filelock` on a sibling file): switching a new database to WAL
takes an exclusive lock for which SQLite may answer "database is locked" at once instead of
waiting out the busy timeout, so concurrent first opens on a fresh cache would fail without it.

A cache is an optimisation: every use goes through `SharedDatabase.run`, and a run never stops
for its cache. When the file is

- corrupt (SQLite's "file is not a database" or "database disk image is malformed", or a table
  whose columns are not the schema's), it is set aside with its `-wal` and `-shm` as
  ``<name>.corrupt-<UTC time>`` (by the one process that still finds it there, under the set-up
  lock), a new one is built in its place and the use is tried once more on it;
- locked by another process (the set-up lock or SQLite's write lock) for longer than
  `lock_timeout_s` (``RAG_EVAL_CACHE_LOCK_TIMEOUT_S``, 30 s by default), the lock is left to its
  owner and this use is skipped;
- unopenable, or hit by a machine failure (`storage.machine`: a full, read-only or forbidden
  disk), this use is skipped.

Each is one warning line naming the cache, its file, the problem and what the run does without it,
once per cache file and problem in a process; any other error (a bug) is raised.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from filelock import FileLock, Timeout

from rag_eval_pipeline.storage.machine import machine_failure_line, warn_once

LOCK_TIMEOUT_ENV = "RAG_EVAL_CACHE_LOCK_TIMEOUT_S"
DEFAULT_LOCK_TIMEOUT_S = 30.0
CORRUPT_ERRORS = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
LOCKED_ERRORS = ("SQLITE_BUSY", "SQLITE_LOCKED")
UNOPENABLE_ERRORS = ("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")
T = TypeVar("T")


class CorruptCacheError(Exception):
    """A cache file whose tables are not the schema's."""


FAILURES = (sqlite3.Error, OSError, Timeout, CorruptCacheError)


def lock_timeout_s() -> float:
    """How long a cache waits for another process's lock: ``RAG_EVAL_CACHE_LOCK_TIMEOUT_S``
    seconds (a positive number), 30 by default."""
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{LOCK_TIMEOUT_ENV}={raw!r}: not a positive number of seconds")
    return value


def _columns(connection: sqlite3.Connection, table: str) -> list[tuple[object, ...]]:
    """Each column of `table` as (name, type, not null, default, primary key position)."""
    return [tuple(row[1:]) for row in connection.execute(f'PRAGMA table_info("{table}")')]


def check_schema(connection: sqlite3.Connection, schema: str) -> None:
    """Raise `CorruptCacheError` unless each table `schema` creates is absent or has exactly its
    columns (read before anything is written, so a file set aside is as it was found)."""
    with contextlib.closing(sqlite3.connect(":memory:")) as expected:
        expected.execute(schema)
        tables = [row[0] for row in expected.execute("SELECT name FROM sqlite_master")]
        wanted = {table: _columns(expected, table) for table in tables}
    for table, columns in wanted.items():
        found = _columns(connection, table)
        if found and found != columns:
            names = ", ".join(str(column[0]) for column in found)
            raise CorruptCacheError(f"wrong schema: table {table} has the columns {names}")


def failure_kind(error: BaseException) -> str | None:
    """The kind of a cache's failure (corrupt, locked, unopenable, machine); None for a bug."""
    if isinstance(error, CorruptCacheError):
        return "corrupt"
    if isinstance(error, Timeout):
        return "locked"
    name = getattr(error, "sqlite_errorname", "") or ""
    for kind, names in (
        ("corrupt", CORRUPT_ERRORS),
        ("locked", LOCKED_ERRORS),
        ("unopenable", UNOPENABLE_ERRORS),
    ):
        if name.startswith(names):
            return kind
    return "machine" if machine_failure_line(error) is not None else None


def aside_name(name: str) -> str:
    """The name a corrupt cache file `name` is set aside under: ``<name>.corrupt-<UTC time>``."""
    return f"{name}.corrupt-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S.%fZ')}"


class SharedDatabase:
    """The SQLite cache file `path` holding `schema`'s tables, opened on first use and kept open
    until `close`; `what` names the cache and `without` says what a run does without it, in
    warnings. Not thread-safe: a caller sharing one across threads serializes its uses."""

    def __init__(self, path: Path, schema: str, what: str, without: str) -> None:
        self.path, self.schema, self.what, self.without = Path(path), schema, what, without
        self._connection: sqlite3.Connection | None = None
        self._inode: int | None = None

    def _setup_lock(self) -> FileLock:
        return FileLock(self.path.with_name(self.path.name + ".setup.lock"), lock_timeout_s())

    def _connected(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._setup_lock():
            self._inode = self.path.stat().st_ino if self.path.exists() else None
            connection = sqlite3.connect(
                self.path, timeout=lock_timeout_s(), isolation_level=None, check_same_thread=False
            )
            try:
                check_schema(connection, self.schema)
                connection.execute("PRAGMA journal_mode = WAL")
                connection.execute("PRAGMA synchronous = NORMAL")
                connection.execute(self.schema)
            except BaseException:
                connection.close()  # a database that could not be set up holds no file open
                raise
            self._inode = self.path.stat().st_ino
        self._connection = connection
        return connection

    def run(self, action: Callable[[sqlite3.Connection], T], default: T) -> T:
        """`action` on the open database; `default` (after one warning) when the cache cannot
        serve it. A corrupt file is set aside and `action` tried once more on a new one."""
        try:
            return action(self._connected())
        except FAILURES as error:
            self.close()
            kind = failure_kind(error)
            if kind is None:
                raise
            if kind != "corrupt":
                self._warn(kind, error)
                return default
            corrupt = error
        try:
            self._set_aside(corrupt)
            return action(self._connected())
        except FAILURES as error:
            self.close()
            if (kind := failure_kind(error)) is None:
                raise
            self._warn(kind, error)
            return default

    def _set_aside(self, error: BaseException) -> None:
        """Rename the corrupt file (and its -wal, -shm) unless another process already did."""
        with self._setup_lock():
            if not self.path.exists() or self.path.stat().st_ino != self._inode:
                return  # another process set it aside and built a new one
            aside = self.path.with_name(aside_name(self.path.name))
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{self.path}{suffix}").rename(f"{aside}{suffix}")
        warn_once(
            f"{self.what}|{aside}",
            f"{self.what} {self.path} is corrupt ({error}): set aside as {aside.name}, "
            "a new one is built in its place",
        )

    def _warn(self, kind: str, error: BaseException) -> None:
        problem = {
            "corrupt": f"{self.path}: corrupt ({error})",
            "locked": f"{self.path}: its lock is held by another process for more than "
            f"{lock_timeout_s():g} s (left to its owner)",
            "unopenable": f"{self.path}: cannot be opened (SQLite: {error})",
        }.get(kind) or str(machine_failure_line(error, str(self.path)))
        warn_once(
            f"{self.what}|{self.path}|{kind}",
            f"{self.what} not used, the run goes on without it: {problem}; {self.without}",
        )

    def close(self) -> None:
        """Close the connection (a later use opens it again)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
