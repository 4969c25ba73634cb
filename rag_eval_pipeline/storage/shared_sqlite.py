"""One SQLite file on a local disk shared by concurrent processes (parallel runs and steps).

`shared_database` opens it in WAL mode with a busy timeout, so readers and a writer proceed
together and writers wait for each other instead of failing, and applies the schema. Processes
set a database up one at a time (a `filelock` on a sibling file): switching a new database to WAL
takes an exclusive lock for which SQLite may answer "database is locked" at once instead of
waiting out the busy timeout, so concurrent first opens on a fresh cache would fail without it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from filelock import FileLock

BUSY_TIMEOUT_S = 30.0


def shared_database(path: Path, schema: str) -> sqlite3.Connection:
    """An autocommit connection to the SQLite file `path` (its folder created), in WAL mode,
    with `schema` applied; closed again when the set-up fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    try:
        with FileLock(path.with_name(path.name + ".setup.lock")):
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute(schema)
    except BaseException:
        connection.close()  # a database that could not be set up holds no file open
        raise
    return connection
