"""A stat cache for the digest of a local folder's files, as git's index does for its files.

`cached_files_digest(root, location)` is `files_digest` of every file under `root` (the value
never depends on the cache), read from ``<location>/file_digests.sqlite3`` without reading a byte
when nothing changed. An entry records, for the folder's resolved path, each file's relative path
with its size, `st_mtime_ns`, `st_ctime_ns`, `st_ino` and `st_dev`, taken before its bytes were
hashed, and the moment (`time_ns`) the first of them was taken. It is reused only when:

- the folder holds exactly the same relative paths with exactly the same six values each: any
  write, rename over, copy over or `touch` changes the ctime, which no user can set back, so a
  same-size rewrite whose mtime was restored (`os.utime`) is still caught; and
- the entry is not racily clean: every file's mtime and ctime is older than that moment by at
  least `RACY_MARGIN_NS` (2 s, above the coarsest timestamp granularity of the filesystems this
  runs on), so a file written again within the same timestamp tick as the one hashed is re-hashed.

Otherwise every file is hashed again (a folder's fingerprint is one running hash over all its
files, so it cannot be patched file by file without changing its value) and the entry replaced.
The cache is one SQLite file shared by concurrent processes (`storage.shared_sqlite`): a corrupt
one is set aside and built again; one locked past the timeout, unopenable or unwritable is one
warning and the digest is computed as without it. A cache on an object store holds no stat
entries (another machine's inode numbers mean nothing here): the files are then hashed each time.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from rag_eval_pipeline.storage.code_version import files_digest, source_files
from rag_eval_pipeline.storage.objects import is_local, storage_path
from rag_eval_pipeline.storage.shared_sqlite import SharedDatabase

CACHE_FILENAME = "file_digests.sqlite3"
RACY_MARGIN_NS = 2_000_000_000
WHAT = "file digest cache"
WITHOUT = "the files are hashed, and hashed again by the next run"
FileStat = tuple[str, int, int, int, int, int]
"""A file's relative path, size, st_mtime_ns, st_ctime_ns, st_ino and st_dev."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS folder_digests (
    folder TEXT PRIMARY KEY,
    files TEXT NOT NULL,
    stat_at_ns INTEGER NOT NULL,
    digest TEXT NOT NULL
)
"""


def file_stats(files: list[Path], root: Path) -> list[FileStat]:
    """Each file's relative path and the five values of its `os.stat` the cache compares."""
    stats = []
    for path in files:
        info = os.stat(path)
        stats.append(
            (
                path.relative_to(root).as_posix(),
                info.st_size,
                info.st_mtime_ns,
                info.st_ctime_ns,
                info.st_ino,
                info.st_dev,
            )
        )
    return stats


def trusted(stats: list[FileStat], stat_at_ns: int) -> bool:
    """Whether no file was changed within `RACY_MARGIN_NS` of `stat_at_ns` (or after it)."""
    return all(
        max(mtime, ctime) < stat_at_ns - RACY_MARGIN_NS for _, _, mtime, ctime, _, _ in stats
    )


def _lookup(connection: sqlite3.Connection, folder: str, stats: list[FileStat]) -> str | None:
    row = connection.execute(
        "SELECT files, stat_at_ns, digest FROM folder_digests WHERE folder = ?", (folder,)
    ).fetchone()
    if row is None:
        return None
    recorded, stat_at_ns, digest = json.loads(row[0]), int(row[1]), str(row[2])
    same = [tuple(entry) for entry in recorded] == stats
    return digest if same and trusted(stats, stat_at_ns) else None


def _store(
    connection: sqlite3.Connection,
    folder: str,
    stats: list[FileStat],
    stat_at_ns: int,
    digest: str,
) -> None:
    connection.execute(
        "INSERT OR REPLACE INTO folder_digests VALUES (?, ?, ?, ?)",
        (folder, json.dumps(stats), stat_at_ns, digest),
    )


def cached_files_digest(
    root: Path, location: str | os.PathLike[str], only: tuple[str, ...] | None = None
) -> str:
    """`files_digest` of every file under `root` (with `only`: those whose relative path is
    one of `only` or lies under one), reused from the stat cache at `location` when no file
    changed (the rule in the module docstring; an entry per `root` and `only`)."""
    directory = storage_path(location)
    files = source_files(root, "*")
    if only is not None:
        files = [p for p in files if is_under(p.relative_to(root).as_posix(), only)]
    if not is_local(directory):
        return files_digest(files, root)
    folder = "\0".join([str(root.resolve()), *(only or ())])
    stat_at_ns = time.time_ns()
    stats = file_stats(files, root)
    cache = SharedDatabase(Path(directory.path) / CACHE_FILENAME, _SCHEMA, WHAT, WITHOUT)
    try:
        if (digest := cache.run(lambda db: _lookup(db, folder, stats), None)) is not None:
            return digest
        digest = files_digest(files, root)
        cache.run(lambda db: _store(db, folder, stats, stat_at_ns, digest), None)
    finally:
        cache.close()
    return digest


def is_under(relative: str, only: tuple[str, ...]) -> bool:
    """Whether the relative path `relative` is one of `only` or lies under one."""
    return any(relative == name or relative.startswith(f"{name}/") for name in only)
