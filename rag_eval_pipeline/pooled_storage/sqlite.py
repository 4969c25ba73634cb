"""Dagster instance storage for one machine: Dagster's SQLite storage with pooled connections.

Dagster's SQLite run and event-log storages create a new SQLAlchemy engine, and so a new SQLite
connection, for every transaction; storing one event takes about five of them, and each pays the
connect and the WAL checkpoint on close. A run of this pipeline stores about 300 events, which
made the storage more than a third of a warm run. `PooledSqliteStorage` keeps one pooled engine
per database file and process instead, and is otherwise Dagster's own SQLite storage: the same
files, schema and migrations, so an existing ``DAGSTER_HOME`` keeps working and can switch back
by deleting the ``storage`` block. ``deploy/dagster.pooled-sqlite.yaml`` enables it through the
version guard of ``rag_eval_pipeline.pooled_storage``; naming this module directly skips the guard::

    storage:
      custom:
        module: rag_eval_pipeline.pooled_storage.sqlite
        class: PooledSqliteStorage
        config:
          base_dir: {env: DAGSTER_HOME}

Every run has its own event-log file, so the engines are kept in a small LRU per process; an
evicted engine closes its idle connections, and connections still in use close when returned.

Two more costs of Dagster's SQLite storage are removed the same way:

- ``has_table`` (asked before every dynamic-partition lookup, and Dagster looks up the dataset
  version of every input and output, about 200 times a run) built a throwaway engine each time;
  here it uses the pooled engine, and a table once found is remembered until the next wipe.
- Connections use ``PRAGMA synchronous=NORMAL``, SQLite's recommended setting in WAL mode (which
  Dagster enables): a commit no longer waits for an fsync. The database stays consistent after a
  crash of the process or the machine; only the last transactions before a power loss or an OS
  crash can be lost, which for a local evaluation instance means re-running the last run.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from dagster._utils import mkdir_p
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

SQLITE_BUSY_TIMEOUT_S = 30
MAX_OPEN_ENGINES = 16


class _EnginePool:
    """One SQLAlchemy engine per (process, connection string), least recently used evicted."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._engines: OrderedDict[tuple[int, str], Engine] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, conn_string: str) -> Engine:
        key = (os.getpid(), conn_string)
        with self._lock:
            engine = self._engines.get(key)
            if engine is None:
                engine = create_engine(conn_string, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})
                event.listen(engine, "connect", _relax_fsync)
                self._engines[key] = engine
                while len(self._engines) > self._capacity:
                    self._engines.popitem(last=False)[1].dispose()
            self._engines.move_to_end(key)
            return engine

    def dispose_under(self, directory: str) -> None:
        """Close the engines of every database file in `directory` (before files are deleted)."""
        with self._lock:
            inside = os.path.join(directory, "")
            for key in [k for k in self._engines if inside in k[1]]:
                self._engines.pop(key).dispose()


ENGINES = _EnginePool(MAX_OPEN_ENGINES)


def _relax_fsync(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


@contextmanager
def _transaction(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as connection, connection.begin():
        yield connection


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's per-run-sharded SQLite event log, reusing one engine per shard file."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._tables_found: set[str] = set()
        super().__init__(base_dir, inst_data=inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = ENGINES.get(self.conn_string_for_shard(shard))
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with _transaction(engine) as connection:
                yield connection

    def has_table(self, table_name: str) -> bool:
        if table_name in self._tables_found:
            return True
        engine = ENGINES.get(self.conn_string_for_shard(INDEX_SHARD_NAME))
        with engine.connect() as connection:
            found = bool(engine.dialect.has_table(connection, table_name))
        if found:
            self._tables_found.add(table_name)
        return found

    def wipe(self) -> None:
        ENGINES.dispose_under(self._base_dir)
        self._tables_found.clear()
        super().wipe()


class PooledSqliteRunStorage(SqliteRunStorage):
    """Dagster's SQLite run storage, reusing one engine for its database file."""

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with _transaction(ENGINES.get(self._conn_string)) as connection:
            yield connection


class PooledSqliteStorage(DagsterSqliteStorage):
    """`DagsterSqliteStorage` with pooled run and event-log storages; schedules stay as they are."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.base_dir = base_dir
        self._run_storage = PooledSqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = PooledSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Any
    ) -> PooledSqliteStorage:
        mkdir_p(config_value["base_dir"])
        return cls(config_value["base_dir"], inst_data=inst_data)
