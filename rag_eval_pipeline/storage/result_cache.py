"""Content-addressed cache of computed frames, for pure computations that are costly to redo.

A result's key is a digest of everything it depends on: its name, this package's code digest,
the content of its input frames (pandas row hashes plus column names and dtypes; Parquet bytes
for columns pandas cannot hash, such as lists) and its parameters (model identities, file
contents). A new date or a backfill over unchanged inputs then reads the stored result instead
of recomputing it, while any change to code, data or parameters gives a new key. The folder is
local or any fsspec URL; results are published atomically (`storage.parquet`), so a crash
never leaves a partial entry. An entry that does not read back as Parquet (corrupted on disk) is
set aside as ``<key>.parquet.corrupt-<UTC time>`` and computed again; an unreadable or unwritable
folder is one warning: the run goes on without the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from collections.abc import Mapping

import pandas as pd
from upath import UPath

from rag_eval_pipeline.storage.batches import TableBatches
from rag_eval_pipeline.storage.code_version import code_digest
from rag_eval_pipeline.storage.machine import cache_write, machine_failure_line, warn_once
from rag_eval_pipeline.storage.objects import storage_path
from rag_eval_pipeline.storage.parquet import (
    UnreadableFileError,
    read_parquet,
    write_parquet_atomically,
)
from rag_eval_pipeline.storage.shared_sqlite import aside_name

WHAT = "result cache"
WITHOUT = "the run goes on without it and computes the result again"


def frame_digest(frame: pd.DataFrame | TableBatches) -> str:
    """A digest of a frame's column names, dtypes and values (row order included); a
    `TableBatches` is hashed chunk by chunk, rows in order."""
    digest = hashlib.blake2b(digest_size=20)
    parts = frame.frames() if isinstance(frame, TableBatches) else iter([frame])
    for position, part in enumerate(parts):
        if position == 0:
            digest.update(repr([(str(c), str(t)) for c, t in part.dtypes.items()]).encode())
        try:
            digest.update(pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes())
        except TypeError:
            buffer = io.BytesIO()
            part.reset_index(drop=True).to_parquet(buffer, index=False)
            digest.update(buffer.getvalue())
    return digest.hexdigest()


def result_key(
    name: str,
    frames: Mapping[str, pd.DataFrame | TableBatches],
    parameters: Mapping[str, object],
) -> str:
    """The key of one result: its name, the code digest, its input frames and parameters."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{name}\0{code_digest()}\0".encode())
    for table in sorted(frames):
        digest.update(f"{table}={frame_digest(frames[table])}\0".encode())
    digest.update(repr(sorted((k, repr(v)) for k, v in parameters.items())).encode())
    return digest.hexdigest()


class ResultCache:
    """Stored results under one folder (local or any fsspec URL), one Parquet file per key."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = storage_path(directory)

    def _path(self, key: str) -> UPath:
        return self.directory / f"{key}.parquet"

    def get(self, key: str) -> pd.DataFrame | None:
        """The stored result of `key`, or None if it was never stored or cannot be read: a
        corrupt entry is set aside (``*.corrupt-<UTC time>``), an unreadable one left, each
        one warning, and the result is computed again."""
        path = self._path(key)
        try:
            return read_parquet(path) if path.exists() else None
        except UnreadableFileError as error:
            self._set_aside(path, error)
        except OSError as error:
            if (line := machine_failure_line(error, str(path))) is None:
                raise
            warn_once(f"{WHAT}|{self.directory}|read", f"{WHAT} not used, {WITHOUT}: {line}")
        return None

    def _set_aside(self, path: UPath, error: UnreadableFileError) -> None:
        cause = error.__cause__ or error
        reason = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        aside = path.with_name(aside_name(path.name))
        with contextlib.suppress(FileNotFoundError):  # another process set it aside first
            path.rename(aside)
        warn_once(
            f"{WHAT}|{aside}",
            f"{WHAT} {path} is corrupt ({reason}): set aside as {aside.name}, {WITHOUT}",
        )

    def put(self, key: str, frame: pd.DataFrame) -> None:
        """Store `frame` as the result of `key` (atomically); on a full, read-only or forbidden
        disk it is not stored (one warning, `storage.machine.cache_write`)."""
        with cache_write(WHAT, self.directory):
            write_parquet_atomically(frame, self._path(key))
