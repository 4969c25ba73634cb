"""Machine failures (a full disk, a read-only or forbidden folder, SQLite's disk I/O error) as
one line naming the path, the cause and the free space where known.

`machine_failure_line` looks through an exception's causes for such a failure and returns the
line, or None for any other error (a bug keeps its traceback). The CLI prints it instead of a
traceback; the IO manager raises it as the step's failure; a cache that cannot be written logs
it as one warning and the run goes on.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CAUSES = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EIO: "input/output error",
}
SQLITE_CAUSES = ("disk i/o error", "database or disk is full", "readonly database")
MARK = "machine failure:"
_LOG = logging.getLogger(__name__)
_WARNED: set[str] = set()


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
        orig = getattr(current, "orig", None)  # SQLAlchemy wraps the driver's error
        if isinstance(orig, BaseException) and id(orig) not in seen:
            current = orig


def free_space(path: str | os.PathLike[str]) -> str | None:
    """The free space of the filesystem holding `path` (its nearest existing folder), e.g.
    "0 B free" or "12.3 MB free"; None when unknown."""
    folder = Path(path)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return None
    for unit in ("B", "kB", "MB", "GB"):
        if free < 1000 or unit == "GB":
            return f"{free:.0f} {unit} free" if unit == "B" else f"{free:.1f} {unit} free"
        free /= 1000
    return None


def machine_failure_line(error: BaseException, path: str | None = None) -> str | None:
    """One line for a machine failure among `error`'s causes (`path`: where it happened, when
    the error does not say), or None when it is another kind of error."""
    for cause in _chain(error):
        if isinstance(cause, OSError) and cause.errno in CAUSES:
            where = cause.filename or path
            return _line(where, CAUSES[cause.errno], cause.errno in (errno.ENOSPC, errno.EDQUOT))
        if isinstance(cause, sqlite3.Error) and any(
            text in str(cause).lower() for text in SQLITE_CAUSES
        ):
            return _line(path, f"SQLite: {str(cause).strip()}", True)
    return None


def _line(path: object, cause: str, with_space: bool) -> str:
    where = f"{os.fspath(path)}: " if path else ""
    space = free_space(os.fspath(path)) if path and with_space else None
    return f"{MARK} {where}{cause}" + (f" ({space} on its filesystem)" if space else "")


@contextmanager
def cache_write(what: str, path: object) -> Iterator[None]:
    """Run a cache write (of the cache `what`, at `path`): a machine failure inside is logged as
    one warning (once per cache and process) and the caller goes on without the entry; any
    other error is raised."""
    try:
        yield
    except (OSError, sqlite3.Error) as error:
        line = machine_failure_line(error, str(path))
        if line is None:
            raise
        warn_once(what, f"{what} not written, the run goes on without it: {line}")


def warn_once(key: str, line: str) -> None:
    """Log `line` as a warning unless a line of the same `key` was logged in this process."""
    if key not in _WARNED:
        _WARNED.add(key)
        _LOG.warning(line)
